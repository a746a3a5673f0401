package audit

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"strings"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlplog/otlploggrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlplog/otlploghttp"
	sdklog "go.opentelemetry.io/otel/sdk/log"
	"go.opentelemetry.io/otel/sdk/resource"
	"google.golang.org/grpc/credentials"
)

// The OTLP transports NewOTLPSink speaks.
const (
	OTLPGRPC = "grpc"
	OTLPHTTP = "http/protobuf"
)

// DefaultOTLPTimeout bounds one export to the collector, retries included.
const DefaultOTLPTimeout = 5 * time.Second

// otlpScope is the instrumentation scope of the exported log records.
const otlpScope = "github.com/driftguard/driftguard/audit"

// OTLPOptions say where and how the OTLP sink exports records.
type OTLPOptions struct {
	// Endpoint is host:port, or a URL: https://host:port[/path], or
	// http://… together with Insecure. The path, for http/protobuf only,
	// defaults to /v1/logs.
	Endpoint string
	// Protocol is OTLPGRPC (the default) or OTLPHTTP.
	Protocol string
	// Insecure sends in plain text, without TLS. Headers are then refused
	// unless the endpoint is a loopback address: they carry credentials.
	Insecure bool
	// CAFile is a PEM bundle of the CAs to trust instead of the system's.
	CAFile string
	// Headers go with every export (an API key, a tenant). Their values
	// are never logged nor put in an error.
	Headers map[string]string
	// Timeout bounds one export, retries included (DefaultOTLPTimeout
	// when 0).
	Timeout time.Duration
	// Instance is the service.instance.id of the records' resource (the
	// pod's name, usually); the host name when empty.
	Instance string
}

// otlpSink exports each batch of records as OTLP log records, in one
// request: the records go through an OpenTelemetry LoggerProvider (which
// gives them the resource and scope) to a processor that only collects
// them, and the batch is handed to the exporter by Write itself, so that
// Write reports what the collector did with it.
type otlpSink struct {
	mu       sync.Mutex
	exporter sdklog.Exporter
	provider *sdklog.LoggerProvider
	emit     func(context.Context, Record)
	coll     *collectProcessor
	target   string
}

// NewOTLPSink returns a Sink that exports records as OTLP log records to
// a collector (docs/audit.md, "OpenTelemetry"). It does not connect until
// the first Write: a collector that is down at start-up is reported by the
// failing writes. Wrap it in NewAsyncSink, so that a slow or absent
// collector holds up no other sink.
func NewOTLPSink(o OTLPOptions) (Sink, error) {
	exp, target, err := newOTLPExporter(o)
	if err != nil {
		return nil, err
	}
	instance := o.Instance
	if instance == "" {
		instance, _ = os.Hostname()
	}
	coll := &collectProcessor{}
	provider := sdklog.NewLoggerProvider(
		sdklog.WithResource(otlpResource(instance)),
		sdklog.WithProcessor(coll),
	)
	logger := provider.Logger(otlpScope)
	return &otlpSink{
		exporter: exp, provider: provider, coll: coll, target: target,
		emit: func(ctx context.Context, r Record) { logger.Emit(ctx, otlpRecord(r)) },
	}, nil
}

func (s *otlpSink) Name() string { return "otlp" }

func (s *otlpSink) Write(ctx context.Context, batch []Record) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, r := range batch {
		s.emit(ctx, r)
	}
	recs := s.coll.take()
	if len(recs) != len(batch) {
		return &partialError{failed: len(batch), permanent: true,
			err: fmt.Errorf("sink otlp: %d of %d records could not be converted", len(batch)-len(recs), len(batch))}
	}
	if err := s.exporter.Export(ctx, recs); err != nil {
		return &partialError{failed: len(batch),
			err: fmt.Errorf("sink otlp: export %d records to %s: %w", len(batch), s.target, err)}
	}
	return nil
}

// Close shuts the exporter down, waiting at most a second for its
// connection to close.
func (s *otlpSink) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	errs := []error{s.provider.Shutdown(ctx), s.exporter.Shutdown(ctx)}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("close otlp exporter to %s: %w", s.target, err)
	}
	return nil
}

// collectProcessor keeps what the LoggerProvider emits until take.
type collectProcessor struct {
	mu   sync.Mutex
	recs []sdklog.Record
}

func (p *collectProcessor) Enabled(context.Context, sdklog.EnabledParameters) bool { return true }

func (p *collectProcessor) OnEmit(_ context.Context, r *sdklog.Record) error {
	p.mu.Lock()
	p.recs = append(p.recs, r.Clone())
	p.mu.Unlock()
	return nil
}

func (p *collectProcessor) take() []sdklog.Record {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := p.recs
	p.recs = nil
	return out
}

func (p *collectProcessor) Shutdown(context.Context) error   { return nil }
func (p *collectProcessor) ForceFlush(context.Context) error { return nil }

// otlpEndpoint is an OTLPOptions.Endpoint taken apart.
type otlpEndpoint struct {
	hostPort string
	path     string // for http/protobuf; empty: the exporter's /v1/logs
	insecure bool
}

// parseOTLPEndpoint checks o's endpoint, transport and TLS settings
// against each other.
func parseOTLPEndpoint(o OTLPOptions) (otlpEndpoint, error) {
	ep := otlpEndpoint{hostPort: o.Endpoint, insecure: o.Insecure}
	if o.Endpoint == "" {
		return ep, errors.New("no endpoint")
	}
	if strings.Contains(o.Endpoint, "://") {
		u, err := url.Parse(o.Endpoint)
		if err != nil {
			return ep, fmt.Errorf("endpoint %q: %w", o.Endpoint, err)
		}
		switch {
		case u.Scheme == "https" && o.Insecure:
			return ep, fmt.Errorf("endpoint %q is https but insecure (plain text) is asked for", o.Endpoint)
		case u.Scheme == "http" && !o.Insecure:
			return ep, fmt.Errorf("endpoint %q is plain http: give the insecure option to mean it, or use https", o.Endpoint)
		case u.Scheme != "http" && u.Scheme != "https":
			return ep, fmt.Errorf("endpoint %q: scheme must be https or http", o.Endpoint)
		case u.User != nil || u.RawQuery != "" || u.Fragment != "":
			return ep, fmt.Errorf("endpoint %s: no user information, query or fragment (give credentials as headers)", u.Redacted())
		case u.Path != "" && u.Path != "/" && o.Protocol == OTLPGRPC:
			return ep, fmt.Errorf("endpoint %q: a gRPC endpoint has no path", o.Endpoint)
		}
		ep.hostPort = u.Host
		if u.Path != "/" {
			ep.path = u.Path
		}
	}
	host, port, err := net.SplitHostPort(ep.hostPort)
	if err != nil || host == "" || port == "" {
		return ep, fmt.Errorf("endpoint %q: want host:port or a URL with a port", o.Endpoint)
	}
	if o.Insecure && len(o.Headers) > 0 && !isLoopback(host) {
		return ep, fmt.Errorf("endpoint %q: headers (credentials) would be sent in plain text to a host that is not loopback; use TLS", o.Endpoint)
	}
	return ep, nil
}

func isLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// otlpTLS returns the TLS configuration for o: the system's CAs, or those
// of o.CAFile.
func otlpTLS(o OTLPOptions) (*tls.Config, error) {
	cfg := &tls.Config{MinVersion: tls.VersionTLS12}
	if o.CAFile == "" {
		return cfg, nil
	}
	pem, err := os.ReadFile(o.CAFile)
	if err != nil {
		return nil, fmt.Errorf("read CA file: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("CA file %s: no PEM certificate in it", o.CAFile)
	}
	cfg.RootCAs = pool
	return cfg, nil
}

// newOTLPExporter builds the exporter of o's transport, and names its
// target for errors.
func newOTLPExporter(o OTLPOptions) (sdklog.Exporter, string, error) {
	if o.Protocol == "" {
		o.Protocol = OTLPGRPC
	}
	if o.Protocol != OTLPGRPC && o.Protocol != OTLPHTTP {
		return nil, "", fmt.Errorf("protocol %q is neither %s nor %s", o.Protocol, OTLPGRPC, OTLPHTTP)
	}
	ep, err := parseOTLPEndpoint(o)
	if err != nil {
		return nil, "", err
	}
	if err := checkHeaders(o.Headers); err != nil {
		return nil, "", err
	}
	timeout := o.Timeout
	if timeout <= 0 {
		timeout = DefaultOTLPTimeout
	}
	var tlsCfg *tls.Config
	if !ep.insecure {
		if tlsCfg, err = otlpTLS(o); err != nil {
			return nil, "", err
		}
	} else if o.CAFile != "" {
		return nil, "", errors.New("a CA file and insecure (plain text) exclude each other")
	}
	target := o.Protocol + " " + ep.hostPort + ep.path
	if o.Protocol == OTLPHTTP {
		exp, err := newOTLPHTTP(ep, tlsCfg, o.Headers, timeout)
		return exp, target, err
	}
	exp, err := newOTLPGRPC(ep, tlsCfg, o.Headers, timeout)
	return exp, target, err
}

func newOTLPGRPC(ep otlpEndpoint, tlsCfg *tls.Config, headers map[string]string, timeout time.Duration) (sdklog.Exporter, error) {
	opts := []otlploggrpc.Option{
		otlploggrpc.WithEndpoint(ep.hostPort),
		otlploggrpc.WithTimeout(timeout),
		otlploggrpc.WithRetry(otlploggrpc.RetryConfig{Enabled: true, InitialInterval: 200 * time.Millisecond, MaxInterval: time.Second, MaxElapsedTime: timeout}),
		otlploggrpc.WithCompressor("gzip"),
	}
	if tlsCfg == nil {
		opts = append(opts, otlploggrpc.WithInsecure())
	} else {
		opts = append(opts, otlploggrpc.WithTLSCredentials(credentials.NewTLS(tlsCfg)))
	}
	if len(headers) > 0 {
		opts = append(opts, otlploggrpc.WithHeaders(headers))
	}
	exp, err := otlploggrpc.New(context.Background(), opts...)
	if err != nil {
		return nil, fmt.Errorf("otlp gRPC exporter to %s: %w", ep.hostPort, err)
	}
	return exp, nil
}

func newOTLPHTTP(ep otlpEndpoint, tlsCfg *tls.Config, headers map[string]string, timeout time.Duration) (sdklog.Exporter, error) {
	opts := []otlploghttp.Option{
		otlploghttp.WithEndpoint(ep.hostPort),
		otlploghttp.WithTimeout(timeout),
		otlploghttp.WithRetry(otlploghttp.RetryConfig{Enabled: true, InitialInterval: 200 * time.Millisecond, MaxInterval: time.Second, MaxElapsedTime: timeout}),
		otlploghttp.WithCompression(otlploghttp.GzipCompression),
	}
	if ep.path != "" {
		opts = append(opts, otlploghttp.WithURLPath(ep.path))
	}
	if tlsCfg == nil {
		opts = append(opts, otlploghttp.WithInsecure())
	} else {
		opts = append(opts, otlploghttp.WithTLSClientConfig(tlsCfg))
	}
	if len(headers) > 0 {
		opts = append(opts, otlploghttp.WithHeaders(headers))
	}
	exp, err := otlploghttp.New(context.Background(), opts...)
	if err != nil {
		return nil, fmt.Errorf("otlp HTTP exporter to %s: %w", ep.hostPort, err)
	}
	return exp, nil
}

// otlpResource is the resource of every exported record.
func otlpResource(instance string) *resource.Resource {
	return resource.NewSchemaless(
		attribute.String("service.name", "driftguard"),
		attribute.String("service.instance.id", instance),
	)
}

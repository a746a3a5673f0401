package app

import (
	"fmt"
	"time"

	"github.com/spf13/pflag"

	"github.com/driftguard/driftguard/audit"
)

// OTLPOptions say where the OTLP audit sink exports records
// (docs/audit.md, "OpenTelemetry"): off while the endpoint is empty.
type OTLPOptions struct {
	AuditOTLPEndpoint    string
	AuditOTLPProtocol    string
	AuditOTLPInsecure    bool
	AuditOTLPCAFile      string
	AuditOTLPHeadersFile string
	AuditOTLPTimeout     time.Duration
	// AuditOTLPBuffer is how many batches of records wait for the
	// collector before new ones fail (counted; the other sinks have them).
	AuditOTLPBuffer int
}

func defaultOTLPOptions() OTLPOptions {
	return OTLPOptions{AuditOTLPProtocol: audit.OTLPGRPC, AuditOTLPTimeout: audit.DefaultOTLPTimeout, AuditOTLPBuffer: 256}
}

func (o *OTLPOptions) bindFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.AuditOTLPEndpoint, "audit-otlp-endpoint", o.AuditOTLPEndpoint, "also export audit records as OpenTelemetry (OTLP) log records to this collector: host:port, or https://host:port[/path] (http/protobuf path default /v1/logs); empty disables")
	fs.StringVar(&o.AuditOTLPProtocol, "audit-otlp-protocol", o.AuditOTLPProtocol, "OTLP transport: grpc or http/protobuf")
	fs.BoolVar(&o.AuditOTLPInsecure, "audit-otlp-insecure", o.AuditOTLPInsecure, "export in plain text, without TLS (with --audit-otlp-headers-file only to a loopback address)")
	fs.StringVar(&o.AuditOTLPCAFile, "audit-otlp-ca-file", o.AuditOTLPCAFile, "PEM file of the CA(s) to trust for the collector's certificate instead of the system's")
	fs.StringVar(&o.AuditOTLPHeadersFile, "audit-otlp-headers-file", o.AuditOTLPHeadersFile, "file of headers sent with every export (API keys, tenant), one \"Name: value\" a line, e.g. a mounted Secret; read at start-up, values never logged")
	fs.DurationVar(&o.AuditOTLPTimeout, "audit-otlp-timeout", o.AuditOTLPTimeout, "bound of one export to the collector, retries included")
	fs.IntVar(&o.AuditOTLPBuffer, "audit-otlp-buffer", o.AuditOTLPBuffer, "batches of audit records waiting for the collector; when full, new batches are counted as not sent to it (the other sinks have them)")
}

func (o *OTLPOptions) validate() error {
	if o.AuditOTLPEndpoint == "" {
		return nil
	}
	if o.AuditOTLPBuffer < 1 {
		return fmt.Errorf("--audit-otlp-buffer: must be at least 1, got %d", o.AuditOTLPBuffer)
	}
	if o.AuditOTLPTimeout <= 0 {
		return fmt.Errorf("--audit-otlp-timeout: must be above 0, got %s", o.AuditOTLPTimeout)
	}
	s, err := o.otlpSink() // checks the endpoint, TLS and headers file at start-up
	if err != nil {
		return err
	}
	if err := s.Close(); err != nil {
		return fmt.Errorf("--audit-otlp-endpoint: %w", err)
	}
	return nil
}

// otlpSink builds the OTLP sink, unbuffered; nil when no endpoint is set.
func (o *OTLPOptions) otlpSink() (audit.Sink, error) {
	if o.AuditOTLPEndpoint == "" {
		return nil, nil
	}
	var headers map[string]string
	if o.AuditOTLPHeadersFile != "" {
		h, err := audit.ReadOTLPHeaders(o.AuditOTLPHeadersFile)
		if err != nil {
			return nil, fmt.Errorf("--audit-otlp-headers-file: %w", err)
		}
		headers = h
	}
	s, err := audit.NewOTLPSink(audit.OTLPOptions{
		Endpoint: o.AuditOTLPEndpoint, Protocol: o.AuditOTLPProtocol, Insecure: o.AuditOTLPInsecure,
		CAFile: o.AuditOTLPCAFile, Headers: headers, Timeout: o.AuditOTLPTimeout,
	})
	if err != nil {
		return nil, fmt.Errorf("--audit-otlp-endpoint: %w", err)
	}
	return s, nil
}

// Package otlprecv is an OTLP logs receiver on loopback for tests: the
// official generated OTLP collector service (go.opentelemetry.io/proto/otlp)
// served by a real gRPC server, or the OTLP/HTTP protobuf encoding of the
// same messages served by net/http, each optionally over TLS. It keeps what
// it receives, with the request headers, for the test to look at.
package otlprecv

import (
	"bytes"
	"compress/gzip"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	collogspb "go.opentelemetry.io/proto/otlp/collector/logs/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	logspb "go.opentelemetry.io/proto/otlp/logs/v1"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	_ "google.golang.org/grpc/encoding/gzip" // the exporters compress with gzip
	"google.golang.org/grpc/metadata"
	"google.golang.org/protobuf/proto"
)

// Log is one received log record with the resource and scope it came with.
type Log struct {
	Resource map[string]any
	Scope    string
	Record   *logspb.LogRecord
	// Attrs are the record's attributes decoded to Go values: string,
	// bool, int64, float64, []any, map[string]any.
	Attrs map[string]any
	// Headers are the headers (gRPC metadata) of the request that carried
	// the record, names in lower case.
	Headers map[string][]string
}

// Receiver collects the logs exported to it.
type Receiver struct {
	// Endpoint is where to export: host:port for gRPC, http(s)://host:port
	// for HTTP.
	Endpoint string
	// CAFile is the PEM file of the CA of its TLS certificate, when it
	// serves TLS.
	CAFile string

	mu      sync.Mutex
	logs    []Log
	changed chan struct{} // closed and replaced on every request
	stop    func()
}

// Options say how the receiver serves.
type Options struct {
	HTTP bool // OTLP/HTTP instead of gRPC
	TLS  bool
	// Addr to listen on; 127.0.0.1:0 when empty. Give the address of a
	// stopped receiver to bring a collector back.
	Addr string
}

// Start serves a receiver on loopback until the test ends.
func Start(t testing.TB, o Options) *Receiver {
	t.Helper()
	r, err := Listen(o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(r.Stop)
	return r
}

// Listen serves a receiver on loopback until Stop (for a TestMain). With
// TLS, the CA file is written to a temporary folder Stop removes.
func Listen(o Options) (*Receiver, error) {
	if o.Addr == "" {
		o.Addr = "127.0.0.1:0"
	}
	lis, err := net.Listen("tcp", o.Addr)
	if err != nil {
		return nil, fmt.Errorf("otlp receiver: listen: %w", err)
	}
	r := &Receiver{changed: make(chan struct{}), Endpoint: lis.Addr().String()}
	var tlsCfg *tls.Config
	var dir string
	if o.TLS {
		if dir, err = os.MkdirTemp("", "otlprecv-"); err == nil {
			tlsCfg, r.CAFile, err = selfSigned(dir)
		}
		if err != nil {
			_ = lis.Close()
			return nil, fmt.Errorf("otlp receiver: %w", err)
		}
	}
	if o.HTTP {
		r.serveHTTP(lis, tlsCfg)
	} else {
		r.serveGRPC(lis, tlsCfg)
	}
	if dir != "" {
		stop := r.stop
		r.stop = func() { stop(); _ = os.RemoveAll(dir) }
	}
	return r, nil
}

// Stop ends the receiver: a collector that is down. What it received stays.
func (r *Receiver) Stop() {
	r.mu.Lock()
	stop := r.stop
	r.stop = nil
	r.mu.Unlock()
	if stop != nil {
		stop()
	}
}

func (r *Receiver) serveGRPC(lis net.Listener, tlsCfg *tls.Config) {
	var opts []grpc.ServerOption
	if tlsCfg != nil {
		opts = append(opts, grpc.Creds(credentials.NewTLS(tlsCfg)))
	}
	srv := grpc.NewServer(opts...)
	collogspb.RegisterLogsServiceServer(srv, &grpcService{r: r})
	go func() { _ = srv.Serve(lis) }()
	r.stop = srv.Stop
}

type grpcService struct {
	collogspb.UnimplementedLogsServiceServer
	r *Receiver
}

func (s *grpcService) Export(ctx context.Context, req *collogspb.ExportLogsServiceRequest) (*collogspb.ExportLogsServiceResponse, error) {
	md, _ := metadata.FromIncomingContext(ctx)
	s.r.add(req, md)
	return &collogspb.ExportLogsServiceResponse{}, nil
}

func (r *Receiver) serveHTTP(lis net.Listener, tlsCfg *tls.Config) {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/logs", r.handleHTTP)
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second, TLSConfig: tlsCfg}
	if tlsCfg != nil {
		r.Endpoint = "https://" + r.Endpoint
		go func() { _ = srv.ServeTLS(lis, "", "") }()
	} else {
		r.Endpoint = "http://" + r.Endpoint
		go func() { _ = srv.Serve(lis) }()
	}
	r.stop = func() { _ = srv.Close() }
}

func (r *Receiver) handleHTTP(w http.ResponseWriter, req *http.Request) {
	var body io.Reader = req.Body
	if req.Header.Get("Content-Encoding") == "gzip" {
		zr, err := gzip.NewReader(req.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		body = zr
	}
	data, err := io.ReadAll(io.LimitReader(body, 64<<20))
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	if ct := req.Header.Get("Content-Type"); ct != "application/x-protobuf" {
		http.Error(w, "content type "+ct+" is not application/x-protobuf", http.StatusUnsupportedMediaType)
		return
	}
	var msg collogspb.ExportLogsServiceRequest
	if err := proto.Unmarshal(data, &msg); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	md := map[string][]string{}
	for k, v := range req.Header {
		md[strings.ToLower(k)] = v
	}
	r.add(&msg, md)
	out, err := proto.Marshal(&collogspb.ExportLogsServiceResponse{})
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/x-protobuf")
	_, _ = w.Write(out)
}

func (r *Receiver) add(req *collogspb.ExportLogsServiceRequest, headers map[string][]string) {
	var logs []Log
	for _, rl := range req.GetResourceLogs() {
		res := attrMap(rl.GetResource().GetAttributes())
		for _, sl := range rl.GetScopeLogs() {
			for _, lr := range sl.GetLogRecords() {
				logs = append(logs, Log{Resource: res, Scope: sl.GetScope().GetName(), Record: lr,
					Attrs: attrMap(lr.GetAttributes()), Headers: headers})
			}
		}
	}
	r.mu.Lock()
	r.logs = append(r.logs, logs...)
	close(r.changed)
	r.changed = make(chan struct{})
	r.mu.Unlock()
}

// Logs returns what was received so far.
func (r *Receiver) Logs() []Log {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Log(nil), r.logs...)
}

// Wait returns the received logs once match holds for one of them, or
// fails the test when ctx ends first.
func (r *Receiver) Wait(ctx context.Context, t testing.TB, what string, match func(Log) bool) Log {
	t.Helper()
	for {
		r.mu.Lock()
		logs, changed := r.logs, r.changed
		r.mu.Unlock()
		for _, l := range logs {
			if match(l) {
				return l
			}
		}
		select {
		case <-changed:
		case <-ctx.Done():
			t.Fatalf("otlp receiver: %s never received (%d records received): %v", what, len(logs), ctx.Err())
		}
	}
}

// WaitCount waits until at least n records were received.
func (r *Receiver) WaitCount(ctx context.Context, t testing.TB, n int) []Log {
	t.Helper()
	for {
		r.mu.Lock()
		logs, changed := r.logs, r.changed
		r.mu.Unlock()
		if len(logs) >= n {
			return append([]Log(nil), logs...)
		}
		select {
		case <-changed:
		case <-ctx.Done():
			t.Fatalf("otlp receiver: %d records received, want %d: %v", len(logs), n, ctx.Err())
		}
	}
}

// Text is everything received, as protobuf text, for looking for a value
// that must not be there.
func (r *Receiver) Text() string {
	var b bytes.Buffer
	for _, l := range r.Logs() {
		fmt.Fprintln(&b, l.Record.String())
	}
	return b.String()
}

func attrMap(kvs []*commonpb.KeyValue) map[string]any {
	m := make(map[string]any, len(kvs))
	for _, kv := range kvs {
		m[kv.GetKey()] = value(kv.GetValue())
	}
	return m
}

// value decodes an OTLP AnyValue.
func value(v *commonpb.AnyValue) any {
	switch x := v.GetValue().(type) {
	case *commonpb.AnyValue_StringValue:
		return x.StringValue
	case *commonpb.AnyValue_BoolValue:
		return x.BoolValue
	case *commonpb.AnyValue_IntValue:
		return x.IntValue
	case *commonpb.AnyValue_DoubleValue:
		return x.DoubleValue
	case *commonpb.AnyValue_BytesValue:
		return x.BytesValue
	case *commonpb.AnyValue_ArrayValue:
		out := make([]any, 0, len(x.ArrayValue.GetValues()))
		for _, e := range x.ArrayValue.GetValues() {
			out = append(out, value(e))
		}
		return out
	case *commonpb.AnyValue_KvlistValue:
		return attrMap(x.KvlistValue.GetValues())
	}
	return nil
}

// selfSigned makes a certificate for 127.0.0.1 and localhost, its own CA,
// and writes it to a PEM file in dir for the client.
func selfSigned(dir string) (*tls.Config, string, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, "", fmt.Errorf("key: %w", err)
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(now.UnixNano()), Subject: pkix.Name{CommonName: "otlp receiver"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour),
		KeyUsage:    x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}, BasicConstraintsValid: true, IsCA: true,
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}, DNSNames: []string{"localhost"},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, "", fmt.Errorf("certificate: %w", err)
	}
	certPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	caFile := filepath.Join(dir, "otlp-ca.pem")
	if err := os.WriteFile(caFile, certPEM, 0o600); err != nil {
		return nil, "", err
	}
	return &tls.Config{MinVersion: tls.VersionTLS12, Certificates: []tls.Certificate{{Certificate: [][]byte{der}, PrivateKey: key}}}, caFile, nil
}

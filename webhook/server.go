package webhook

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/http"
	"slices"
	"time"

	"github.com/go-logr/logr"
)

// Server serves the webhook over TLS; it implements manager.Runnable.
type Server struct {
	Addr      string
	Cert      tls.Certificate
	Validator http.Handler
	Mutator   http.Handler
	Log       logr.Logger
	// GetCertificate, when set, serves the certificate of each handshake
	// instead of Cert, so a rotated certificate is served without a restart.
	GetCertificate func(*tls.ClientHelloInfo) (*tls.Certificate, error)
	// MinVersion is the lowest TLS version accepted; TLS 1.2 when zero.
	MinVersion uint16
	// ClientCAs, when set, makes every connection present a client
	// certificate that one of them signed (the API server's, as its
	// admission configuration names it); a connection without one is
	// refused during the TLS handshake, before any request is read.
	ClientCAs *x509.CertPool
	// ClientNames, when set, are the names one of which the client
	// certificate must carry as its common name or a DNS name.
	ClientNames []string
	// Limits bound what the server reads before and while it decides.
	Limits Limits

	ready chan struct{}
	addr  net.Addr
	gate  *gate
}

// NewServer returns a server for the validator and mutator (may be nil) on addr.
func NewServer(addr string, cert tls.Certificate, validator, mutator http.Handler, log logr.Logger) *Server {
	return &Server{Addr: addr, Cert: cert, Validator: validator, Mutator: mutator, Log: log, ready: make(chan struct{})}
}

// BoundAddr waits until the server listens and returns its address.
func (s *Server) BoundAddr(ctx context.Context) (net.Addr, error) {
	select {
	case <-s.ready:
		return s.addr, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// Start listens and serves until ctx ends.
func (s *Server) Start(ctx context.Context) error {
	gate, err := newGate(s.Limits, s.Log)
	if err != nil {
		return err
	}
	s.gate = gate
	mux := http.NewServeMux()
	mux.Handle(ValidatePath, instrument("validate", gate.wrap(s.Validator)))
	if s.Mutator != nil {
		mux.Handle(MutatePath, instrument("mutate", gate.wrap(s.Mutator)))
	}
	mux.HandleFunc(HealthPath, func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusOK) })
	ln, err := net.Listen("tcp", s.Addr)
	if err != nil {
		return fmt.Errorf("webhook listen %s: %w", s.Addr, err)
	}
	s.addr = ln.Addr()
	tlsConfig := s.tlsConfig()
	srv := &http.Server{
		Handler:           mux,
		TLSConfig:         tlsConfig,
		ReadHeaderTimeout: 5 * time.Second,
		ReadTimeout:       15 * time.Second,
		WriteTimeout:      15 * time.Second,
		IdleTimeout:       90 * time.Second,
		// Refused handshakes (no or a wrong client certificate, port
		// scans) are logged at debug level, not to stderr.
		ErrorLog: newErrorLog(s.Log),
	}
	close(s.ready)
	s.Log.Info("webhook serving", "addr", s.addr.String(), "clientCertificates", s.ClientCAs != nil,
		"maxRequestBytes", gate.limits.MaxRequestBytes, "maxBytesInFlight", gate.limits.MaxBytesInFlight, "maxInFlight", gate.limits.MaxInFlight)
	errc := make(chan error, 1)
	go func() { errc <- srv.ServeTLS(ln, "", "") }()
	select {
	case err := <-errc:
		return fmt.Errorf("webhook serve: %w", err)
	case <-ctx.Done():
		shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := srv.Shutdown(shutdown); err != nil && !errors.Is(err, http.ErrServerClosed) {
			return fmt.Errorf("webhook shutdown: %w", err)
		}
		return nil
	}
}

func (s *Server) tlsConfig() *tls.Config {
	c := &tls.Config{MinVersion: max(s.MinVersion, tls.VersionTLS12)}
	if s.GetCertificate != nil {
		c.GetCertificate = observed(s.GetCertificate)
	} else {
		c.Certificates = []tls.Certificate{s.Cert}
		observeCertificate(&s.Cert)
	}
	if s.ClientCAs != nil {
		c.ClientAuth = tls.RequireAndVerifyClientCert
		c.ClientCAs = s.ClientCAs
		if len(s.ClientNames) > 0 {
			names := slices.Clone(s.ClientNames)
			c.VerifyConnection = func(cs tls.ConnectionState) error {
				return clientNamed(cs, names)
			}
		}
	}
	return c
}

// clientNamed checks that the verified client certificate carries one of
// names as its common name or a DNS name.
func clientNamed(cs tls.ConnectionState, names []string) error {
	if len(cs.PeerCertificates) == 0 {
		return errors.New("no client certificate")
	}
	leaf := cs.PeerCertificates[0]
	if slices.Contains(names, leaf.Subject.CommonName) {
		return nil
	}
	for _, n := range leaf.DNSNames {
		if slices.Contains(names, n) {
			return nil
		}
	}
	return fmt.Errorf("client certificate %q (DNS names %v) is not one of the permitted names %v", leaf.Subject.CommonName, leaf.DNSNames, names)
}

// NeedLeaderElection is false: every replica answers admission reviews.
func (s *Server) NeedLeaderElection() bool { return false }

package webhook

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
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

	ready chan struct{}
	addr  net.Addr
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
	mux := http.NewServeMux()
	mux.Handle(ValidatePath, s.Validator)
	if s.Mutator != nil {
		mux.Handle(MutatePath, s.Mutator)
	}
	mux.HandleFunc(HealthPath, func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusOK) })
	ln, err := net.Listen("tcp", s.Addr)
	if err != nil {
		return fmt.Errorf("webhook listen %s: %w", s.Addr, err)
	}
	s.addr = ln.Addr()
	tlsConfig := &tls.Config{MinVersion: max(s.MinVersion, tls.VersionTLS12)}
	if s.GetCertificate != nil {
		tlsConfig.GetCertificate = s.GetCertificate
	} else {
		tlsConfig.Certificates = []tls.Certificate{s.Cert}
	}
	srv := &http.Server{
		Handler:           mux,
		TLSConfig:         tlsConfig,
		ReadHeaderTimeout: 5 * time.Second,
		ReadTimeout:       15 * time.Second,
		WriteTimeout:      15 * time.Second,
		IdleTimeout:       90 * time.Second,
	}
	close(s.ready)
	s.Log.Info("webhook serving", "addr", s.addr.String())
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

// NeedLeaderElection is false: every replica answers admission reviews.
func (s *Server) NeedLeaderElection() bool { return false }

package e2e

import (
	"encoding/pem"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync/atomic"
)

// gitTLS is an HTTPS server on loopback whose certificate the guard
// trusts as an operator makes it trust a private CA: through Go's system
// roots, with SSL_CERT_FILE. Tests set what it serves in gitTLSHandler.
var (
	gitTLS        *httptest.Server
	gitTLSHandler atomic.Pointer[http.Handler]
)

// startGitTLS starts gitTLS and points SSL_CERT_FILE at its certificate.
// It must run before anything in the process reads the system roots (they
// are read once).
func startGitTLS() (stop func(), err error) {
	dir, err := os.MkdirTemp("", "driftguard-e2e-tls-")
	if err != nil {
		return nil, err
	}
	gitTLS = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := gitTLSHandler.Load()
		if h == nil {
			http.Error(w, "no handler", http.StatusServiceUnavailable)
			return
		}
		(*h).ServeHTTP(w, r)
	}))
	gitTLS.StartTLS()
	stop = func() {
		gitTLS.Close()
		os.RemoveAll(dir)
	}
	file := filepath.Join(dir, "ca.pem")
	if err := os.WriteFile(file, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: gitTLS.Certificate().Raw}), 0o644); err != nil {
		stop()
		return nil, err
	}
	if err := os.Setenv("SSL_CERT_FILE", file); err != nil {
		stop()
		return nil, err
	}
	return stop, nil
}

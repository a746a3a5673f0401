package gitwrite

import (
	"encoding/pem"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
)

// tlsFront is an HTTPS server on loopback that the process trusts through
// Go's system roots (SSL_CERT_FILE), as an operator trusts a private CA:
// credentials go only over HTTPS. Tests set what it serves in tlsHandler.
var (
	tlsFront   *httptest.Server
	tlsHandler atomic.Pointer[http.Handler]
)

func TestMain(m *testing.M) {
	os.Exit(runTests(m))
}

func runTests(m *testing.M) int {
	dir, err := os.MkdirTemp("", "gitwrite-tls-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	tlsFront = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := tlsHandler.Load()
		if h == nil {
			http.Error(w, "no handler", http.StatusServiceUnavailable)
			return
		}
		(*h).ServeHTTP(w, r)
	}))
	tlsFront.StartTLS()
	defer tlsFront.Close()
	file := filepath.Join(dir, "ca.pem")
	// Before anything reads the system roots: they are read once.
	if err := os.WriteFile(file, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: tlsFront.Certificate().Raw}), 0o644); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if err := os.Setenv("SSL_CERT_FILE", file); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return m.Run()
}

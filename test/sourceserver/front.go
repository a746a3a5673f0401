// Package sourceserver runs real servers of Guard sources on loopback for
// tests and benchmarks: an OCI distribution registry (go-containerregistry's
// pkg/registry), a Helm chart repository (helm package and helm repo index
// output of the real helm binary, served over HTTP) and a MinIO server (the
// real S3 server, built by tools/build.sh). Each sits behind a Front that
// logs every request, can require basic auth, and can go down and come back
// on the same address.
package sourceserver

import (
	"errors"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"
)

// Front serves a handler on a fixed loopback address and logs requests.
type Front struct {
	addr    string
	handler http.Handler

	mu         sync.Mutex
	srv        *http.Server
	log        []string // "METHOD /path"
	user, pass string
}

// NewFront serves h on a free loopback port.
func NewFront(h http.Handler) (*Front, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	f := &Front{addr: ln.Addr().String(), handler: h}
	f.serve(ln)
	return f, nil
}

// Addr is host:port.
func (f *Front) Addr() string { return f.addr }

// SetAuth requires basic auth with user and pass from now on; "" turns it off.
func (f *Front) SetAuth(user, pass string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.user, f.pass = user, pass
}

// Requests returns the requests so far, "METHOD /path" each.
func (f *Front) Requests() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.log)
}

// Since returns the requests after the first n.
func (f *Front) Since(n int) []string {
	all := f.Requests()
	return all[min(n, len(all)):]
}

// Count counts the requests so far that contain substr.
func (f *Front) Count(substr string) int {
	n := 0
	for _, r := range f.Requests() {
		if strings.Contains(r, substr) {
			n++
		}
	}
	return n
}

// Stop closes the listener and every connection: the server is down.
func (f *Front) Stop() {
	f.mu.Lock()
	srv := f.srv
	f.srv = nil
	f.mu.Unlock()
	if srv != nil {
		_ = srv.Close()
	}
}

// Start serves again on the same address after Stop.
func (f *Front) Start() error {
	var ln net.Listener
	var err error
	for i := 0; i < 50; i++ { // the port may linger a moment after Close
		if ln, err = net.Listen("tcp", f.addr); err == nil {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if err != nil {
		return err
	}
	f.serve(ln)
	return nil
}

// Close stops the server for good.
func (f *Front) Close() { f.Stop() }

func (f *Front) serve(ln net.Listener) {
	srv := &http.Server{Handler: http.HandlerFunc(f.handle), ReadHeaderTimeout: 10 * time.Second}
	f.mu.Lock()
	f.srv = srv
	f.mu.Unlock()
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			_ = ln.Close()
		}
	}()
}

func (f *Front) handle(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	f.log = append(f.log, r.Method+" "+r.URL.Path)
	user, pass := f.user, f.pass
	f.mu.Unlock()
	if user != "" {
		u, p, ok := r.BasicAuth()
		if !ok || u != user || p != pass {
			w.Header().Set("WWW-Authenticate", `Basic realm="sourceserver"`)
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
	}
	f.handler.ServeHTTP(w, r)
}

package notify

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr/funcr"

	"github.com/driftguard/driftguard/audit"
)

// TestSinkLogsHostOnly: a notification that is not delivered is logged
// with the host of the URL, never its path, query or user, which hold the
// secret of a Slack or Teams webhook.
func TestSinkLogsHostOnly(t *testing.T) {
	down := httptest.NewServer(&receiver{fail: true})
	t.Cleanup(down.Close)
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-time.After(2 * time.Second):
		case <-r.Context().Done():
		}
	}))
	t.Cleanup(slow.Close)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := ln.Addr().String() // nothing listens there any more
	ln.Close()
	redirect := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "http://"+closed+"/hooks/SECRET-redirect-path?token=SECRET-redirect-query", http.StatusTemporaryRedirect)
	}))
	t.Cleanup(redirect.Close)
	hostOfServer := func(s *httptest.Server) string { return strings.TrimPrefix(s.URL, "http://") }

	tests := []struct {
		name     string
		url      string
		host     string // logged as host
		errorHas string // the logged error says this
	}{
		{"receiver answers 503", down.URL + "/services/T0/B0/SECRET-path?token=SECRET-query", hostOfServer(down), "503 Service Unavailable"},
		{"user and password", "http://hook:SECRET-password@" + hostOfServer(down) + "/x", hostOfServer(down), "503"},
		{"connection refused", "http://" + closed + "/services/T0/B0/SECRET-path", closed, "connection refused"},
		{"timeout", slow.URL + "/services/SECRET-path", hostOfServer(slow), "Client.Timeout exceeded"},
		{"redirect to a dead host", redirect.URL + "/services/SECRET-path", hostOfServer(redirect), "connection refused"},
		{"URL does not parse", "http://" + closed + "/SECRET-path%zz", "(unparsable URL)", "does not parse"},
		{"bad port", "http://127.0.0.1:SECRET-port/x", "(unparsable URL)", "does not parse"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var mu sync.Mutex
			var logged []string
			log := funcr.New(func(prefix, args string) {
				mu.Lock()
				defer mu.Unlock()
				logged = append(logged, args)
			}, funcr.Options{Verbosity: 10})
			s := &Sink{
				URL:    func(context.Context) (string, error) { return tt.url, nil },
				Client: &http.Client{Timeout: 200 * time.Millisecond},
				Log:    log,
			}
			rec := audit.Record{Time: time.Now(), Type: audit.Drift, Guard: "shop", Object: audit.Object{Kind: "ConfigMap", Namespace: "shop", Name: "cm"}}
			if err := s.Write(context.Background(), []audit.Record{rec}); err != nil {
				t.Fatal(err)
			}
			mu.Lock()
			defer mu.Unlock()
			all := strings.Join(logged, "\n")
			if len(logged) != 1 || !strings.Contains(all, `"host"="`+tt.host+`"`) || !strings.Contains(all, tt.errorHas) {
				t.Fatalf("log %q, want one line with host %s and %q", all, tt.host, tt.errorHas)
			}
			if strings.Contains(all, "SECRET") {
				t.Fatalf("log holds the secret part of the URL: %s", all)
			}
		})
	}
}

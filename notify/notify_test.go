package notify

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"

	"github.com/driftguard/driftguard/api/v1alpha1"
	"github.com/driftguard/driftguard/audit"
	"github.com/driftguard/driftguard/decision"
	"github.com/driftguard/driftguard/health"
)

func TestOf(t *testing.T) {
	cm := audit.Object{Version: "v1", Kind: "ConfigMap", Namespace: "shop", Name: "cfg"}
	cases := []struct {
		name string
		rec  audit.Record
		kind string
		text string
	}{
		{"drift", audit.Record{Type: audit.Drift, Guard: "shop", User: "alice", Object: cm, Action: "revert"}, Drift, "ConfigMap shop/cfg drifted from Git (changed by alice); action: revert"},
		{"dry-run drift", audit.Record{Type: audit.Drift, Guard: "shop", Object: cm, DryRun: true}, "", ""},
		{"sync failed", audit.Record{Type: audit.Error, Guard: "shop", Operation: "SYNC", Reason: v1alpha1.ReasonApplyFailed, Error: "apply x: forbidden"}, SyncFailed, "sync failed: apply x: forbidden"},
		{"render failed", audit.Record{Type: audit.Error, Guard: "shop", Operation: "RENDER", Error: "b.yaml:3: bad"}, SyncFailed, "b.yaml:3"},
		{"degraded", audit.Record{Type: audit.Health, Guard: "shop", Action: string(health.Degraded), Reason: "Deployment shop/web: progress deadline exceeded"}, Degraded, "is Degraded: Deployment shop/web"},
		{"healthy again", audit.Record{Type: audit.Health, Guard: "shop", Action: string(health.Healthy)}, "", ""},
		{"fight", audit.Record{Type: audit.Error, Guard: "shop", Rule: decision.RuleFightDetected, Reason: "hpa keeps changing it"}, Degraded, "hpa keeps changing it"},
		{"routine apply", audit.Record{Type: audit.Apply, Guard: "shop", Object: cm}, "", ""},
		{"decision", audit.Record{Type: audit.Decision, Guard: "shop", Object: cm, Action: "deny"}, "", ""},
		{"revert error", audit.Record{Type: audit.Error, Guard: "shop", Operation: "REVERT", Error: "x"}, "", ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			n, ok := Of(c.rec)
			if ok != (c.kind != "") || n.Kind != c.kind || !strings.Contains(n.Summary, c.text) {
				t.Fatalf("Of = %+v, %v; want kind %q with %q", n, ok, c.kind, c.text)
			}
		})
	}
}

// receiver is a real HTTP server on loopback that keeps what it is sent.
type receiver struct {
	mu   sync.Mutex
	got  []Notification
	fail bool
}

func (r *receiver) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	b, _ := io.ReadAll(req.Body)
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.fail {
		http.Error(w, "down", http.StatusServiceUnavailable)
		return
	}
	var n Notification
	if err := json.Unmarshal(b, &n); err != nil || req.Header.Get("Content-Type") != "application/json" {
		http.Error(w, "bad body", http.StatusBadRequest)
		return
	}
	r.got = append(r.got, n)
}

func TestSinkRateLimitsPerGuardAndKind(t *testing.T) {
	rcv := &receiver{}
	srv := httptest.NewServer(rcv)
	defer srv.Close()
	s := &Sink{URL: func(context.Context) (string, error) { return srv.URL, nil }, Period: time.Minute, Log: logr.Discard()}
	t0 := time.Date(2026, 12, 3, 10, 0, 0, 0, time.UTC)
	drift := func(guard string, at time.Duration) audit.Record {
		return audit.Record{Time: t0.Add(at), Type: audit.Drift, Guard: guard, Object: audit.Object{Kind: "ConfigMap", Namespace: "ns", Name: "cm"}}
	}
	batch := []audit.Record{
		drift("a", 0), drift("a", time.Second), drift("a", 2*time.Second), // two held back
		drift("b", 3*time.Second), // another Guard: its own limit
		{Time: t0.Add(4 * time.Second), Type: audit.Error, Guard: "a", Operation: "SYNC", Error: "x"}, // another kind
		drift("a", 61*time.Second), // a period later: sent, counting the two
	}
	if err := s.Write(context.Background(), batch); err != nil {
		t.Fatal(err)
	}
	rcv.mu.Lock()
	defer rcv.mu.Unlock()
	var summary []string
	for _, n := range rcv.got {
		summary = append(summary, n.Guard+"/"+n.Kind+"/"+strings.Repeat("+", n.Suppressed))
	}
	want := "a/drift/ b/drift/ a/sync-failed/ a/drift/++"
	if strings.Join(summary, " ") != want {
		t.Fatalf("sent %v, want %s", summary, want)
	}
}

func TestSinkReceiverDown(t *testing.T) {
	rcv := &receiver{fail: true}
	srv := httptest.NewServer(rcv)
	defer srv.Close()
	s := &Sink{URL: func(context.Context) (string, error) { return srv.URL, nil }, Log: logr.Discard()}
	rec := audit.Record{Time: time.Now(), Type: audit.Drift, Guard: "a"}
	// A receiver that is down does not fail the audit pipeline.
	if err := s.Write(context.Background(), []audit.Record{rec}); err != nil {
		t.Fatal(err)
	}
}

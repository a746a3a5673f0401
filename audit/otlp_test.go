package audit

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/driftguard/driftguard/health"
	"github.com/driftguard/driftguard/redact"
	"github.com/driftguard/driftguard/test/otlprecv"
)

func waitCtx(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// fullRecord has every field of a record set.
func fullRecord() Record {
	return Record{
		Time: time.Date(2026, 12, 4, 10, 0, 0, 123000000, time.UTC), Type: Decision, Guard: "shop",
		User: "alice", Groups: []string{"dev", "system:authenticated"}, Manager: "kubectl-edit", Operation: "UPDATE",
		Object: Object{Group: "apps", Version: "v1", Kind: "Deployment", Namespace: "shop", Name: "web"},
		Fields: []Field{{Path: "/spec/replicas", Desired: float64(3), Live: float64(5), Old: float64(3)},
			{Path: "/metadata/labels/x", Change: "added", Live: "y"}},
		Action: "deny", Reason: "managed by Git", Rule: "data.driftguard.deny", PolicyAction: "revert",
		PolicyRevision: "rev1", Source: &Source{URL: "https://git.example/infra.git", Revision: "abc123", Path: "apps/web.yaml", Line: 7},
		RequestUID: "uid-1", DryRun: true, Orphan: true, PolicyInput: json.RawMessage(`{"operation":"UPDATE"}`),
		Error: "boom", DurationMS: 1.5,
	}
}

// TestOTLPSinkExportsEveryField: over gRPC and HTTP, with TLS and a header
// from a headers file, a record reaches a real OTLP receiver with every
// field as the attribute docs/audit.md names, its time, severity, event
// name, body and the resource.
func TestOTLPSinkExportsEveryField(t *testing.T) {
	for _, proto := range []string{OTLPGRPC, OTLPHTTP} {
		t.Run(proto, func(t *testing.T) {
			recv := otlprecv.Start(t, otlprecv.Options{HTTP: proto == OTLPHTTP, TLS: true})
			hf := filepath.Join(t.TempDir(), "headers")
			if err := os.WriteFile(hf, []byte("# tenant\nX-Scope-OrgID: team-a\nauthorization=Bearer tok==\n"), 0o600); err != nil {
				t.Fatal(err)
			}
			headers, err := ReadOTLPHeaders(hf)
			if err != nil {
				t.Fatal(err)
			}
			endpoint := recv.Endpoint
			if proto == OTLPHTTP {
				endpoint += "/v1/logs"
			}
			s, err := NewOTLPSink(OTLPOptions{Endpoint: endpoint, Protocol: proto, CAFile: recv.CAFile, Headers: headers, Instance: "pod-1"})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			if err := s.Write(waitCtx(t), []Record{fullRecord()}); err != nil {
				t.Fatal(err)
			}
			got := recv.WaitCount(waitCtx(t), t, 1)[0]
			checkFullRecord(t, got)
			if h := got.Headers["x-scope-orgid"]; len(h) != 1 || h[0] != "team-a" {
				t.Errorf("header x-scope-orgid = %v", h)
			}
			if h := got.Headers["authorization"]; len(h) != 1 || h[0] != "Bearer tok==" {
				t.Errorf("header authorization = %v", h)
			}
		})
	}
}

func checkFullRecord(t *testing.T, got otlprecv.Log) {
	t.Helper()
	want := map[string]any{
		"driftguard.type": "decision", "driftguard.guard": "shop", "driftguard.user": "alice",
		"driftguard.groups": []any{"dev", "system:authenticated"}, "driftguard.manager": "kubectl-edit",
		"driftguard.operation": "UPDATE", "driftguard.object.group": "apps", "driftguard.object.version": "v1",
		"driftguard.object.kind": "Deployment", "driftguard.object.namespace": "shop", "driftguard.object.name": "web",
		"driftguard.fields": []any{
			map[string]any{"path": "/spec/replicas", "desired": "3", "live": "5", "old": "3"},
			map[string]any{"path": "/metadata/labels/x", "change": "added", "live": `"y"`}},
		"driftguard.action": "deny", "driftguard.reason": "managed by Git", "driftguard.rule": "data.driftguard.deny",
		"driftguard.policy_action": "revert", "driftguard.policy_revision": "rev1",
		"driftguard.source.url": "https://git.example/infra.git", "driftguard.source.revision": "abc123",
		"driftguard.source.path": "apps/web.yaml", "driftguard.source.line": int64(7), "driftguard.request_uid": "uid-1",
		"driftguard.dry_run": true, "driftguard.orphan": true, "driftguard.policy_input": `{"operation":"UPDATE"}`,
		"driftguard.error": "boom", "driftguard.duration_ms": 1.5,
	}
	if g, w := fmt.Sprint(got.Attrs), fmt.Sprint(want); g != w {
		t.Errorf("attributes:\n got %s\nwant %s", g, w)
	}
	lr := got.Record
	if ts := time.Unix(0, int64(lr.GetTimeUnixNano())).UTC(); !ts.Equal(fullRecord().Time) {
		t.Errorf("time = %s", ts)
	}
	if lr.GetSeverityText() != "ERROR" || lr.GetSeverityNumber() != 17 {
		t.Errorf("severity = %s %d, want ERROR 17 (the record has an error)", lr.GetSeverityText(), lr.GetSeverityNumber())
	}
	if lr.GetEventName() != "driftguard.audit.decision" {
		t.Errorf("event name = %q", lr.GetEventName())
	}
	if body := lr.GetBody().GetStringValue(); !strings.HasPrefix(body, "Change denied (UPDATE) by alice via kubectl-edit") {
		t.Errorf("body = %q", body)
	}
	if got.Resource["service.name"] != "driftguard" || got.Resource["service.instance.id"] != "pod-1" {
		t.Errorf("resource = %v", got.Resource)
	}
	if got.Scope != otlpScope {
		t.Errorf("scope = %q", got.Scope)
	}
}

// TestOTLPSeverity: severity by type and action.
func TestOTLPSeverity(t *testing.T) {
	for _, tc := range []struct {
		r    Record
		want string
	}{
		{Record{Type: Decision, Action: "deny"}, "WARN"},
		{Record{Type: Decision, Action: "warn"}, "WARN"},
		{Record{Type: Decision, Action: "allow"}, "INFO"},
		{Record{Type: Decision, Action: "revert"}, "INFO"},
		{Record{Type: Drift}, "WARN"},
		{Record{Type: Revert, Action: "reverted"}, "INFO"},
		{Record{Type: Revert, Error: "conflict"}, "ERROR"},
		{Record{Type: Apply, Action: "configured"}, "INFO"},
		{Record{Type: Prune, Action: "deleted"}, "INFO"},
		{Record{Type: Recreate, Action: "created"}, "INFO"},
		{Record{Type: Error}, "ERROR"},
		{Record{Type: Health, Action: string(health.Degraded)}, "WARN"},
		{Record{Type: Health, Action: string(health.Healthy)}, "INFO"},
		{Record{Type: Protection, Action: "restored"}, "WARN"},
	} {
		if _, got := otlpSeverity(tc.r); got != tc.want {
			t.Errorf("%s %s (error %q): %s, want %s", tc.r.Type, tc.r.Action, tc.r.Error, got, tc.want)
		}
	}
}

// TestOTLPSinkCarriesNoSecret: records built with a secret value in every
// text, logged through a Logger, reach the receiver without it.
func TestOTLPSinkCarriesNoSecret(t *testing.T) {
	const secret = "planted-otlp-S3cret"
	redact.Secrets.Set("otlp-test", []string{secret})
	t.Cleanup(func() { redact.Secrets.Forget("otlp-test") })
	recv := otlprecv.Start(t, otlprecv.Options{})
	s, err := NewOTLPSink(OTLPOptions{Endpoint: recv.Endpoint, Insecure: true})
	if err != nil {
		t.Fatal(err)
	}
	l := newTestLogger((&logSpy{}).logger(), 16, NewAsyncSink(s, 16, 1, DefaultAsyncDrain))
	startLogger(t, l)
	types := []Type{Decision, Drift, Revert, Apply, Prune, Error, Recreate, Health, Protection}
	for _, typ := range types {
		l.Log(context.Background(), plantedRecord(typ, "deny", secret))
	}
	if err := flush(t, l); err != nil {
		t.Fatal(err)
	}
	logs := recv.WaitCount(waitCtx(t), t, len(types))
	text := recv.Text()
	for _, bad := range []string{secret, base64.StdEncoding.EncodeToString([]byte(secret))[:20], "helm-values-in-spec", "spec-var-value-1"} {
		if strings.Contains(text, bad) {
			t.Errorf("the receiver got %q:\n%s", bad, text)
		}
	}
	for _, lg := range logs {
		if r, _ := lg.Attrs["driftguard.reason"].(string); !strings.Contains(r, redact.Marker) || lg.Attrs["driftguard.object.name"] != "app" {
			t.Errorf("record lost more than the secret: %v", lg.Attrs)
		}
	}
}

// TestOTLPSinkCollectorDown: with the collector down, admission's Log does
// not wait on it, stdout gets every record, the failure is logged (summed
// up, without the header's value) and counted, and Close, after the drain
// time, counts what was not sent. Once the collector is back, records
// reach it again.
func TestOTLPSinkCollectorDown(t *testing.T) {
	recv := otlprecv.Start(t, otlprecv.Options{})
	addr := recv.Endpoint
	recv.Stop()
	const token = "header-token-V4lue"
	s, err := NewOTLPSink(OTLPOptions{Endpoint: addr, Insecure: true, Timeout: 200 * time.Millisecond,
		Headers: map[string]string{"authorization": "Bearer " + token}})
	if err != nil {
		t.Fatal(err)
	}
	spy := &logSpy{}
	var out bytes.Buffer
	l := newTestLogger(spy.logger(), 64, NewWriterSink("stdout", &out), NewAsyncSink(s, 2, 1, 300*time.Millisecond))
	l.failureEvery = time.Hour // the first failure at once, the rest summed up at Close
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	started := make(chan error, 1)
	go func() { started <- l.Start(ctx) }()
	const n = 40
	for i := range n {
		l.Log(context.Background(), rec(i))
		if i%10 == 9 {
			_ = flush(t, l)
		}
	}
	_ = flush(t, l)
	if got := strings.Count(out.String(), "\n"); got != n {
		t.Errorf("stdout got %d records, want %d", got, n)
	}
	cancel()
	if err := <-started; err != nil {
		t.Fatal(err)
	}
	cerr := l.Close() // counts what the drain time left unsent
	st := l.Stats()
	if st.Written["stdout"] != n || st.Failed["otlp"] == 0 || st.Dropped != 0 {
		t.Errorf("stats %+v: want stdout %d, otlp failures, none dropped", st, n)
	}
	lines := spy.matching("audit sink did not take records", `"sink"="otlp"`)
	if len(lines) == 0 {
		t.Errorf("no failure logged for the otlp sink: %v", spy.matching("otlp"))
	}
	all := strings.Join(spy.matching(""), "\n") + fmt.Sprint(cerr)
	if strings.Contains(all, token) {
		t.Errorf("the header value reached the log or an error:\n%s", all)
	}

	// The collector comes back on the same address.
	back := otlprecv.Start(t, otlprecv.Options{Addr: addr})
	s2, err := NewOTLPSink(OTLPOptions{Endpoint: addr, Insecure: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	if err := s2.Write(waitCtx(t), []Record{rec(1)}); err != nil {
		t.Fatal(err)
	}
	back.WaitCount(waitCtx(t), t, 1)
}

// TestOTLPOptions: what NewOTLPSink refuses, with errors that never show a
// header value.
func TestOTLPOptions(t *testing.T) {
	h := map[string]string{"authorization": "Bearer hidden-value"}
	for _, tc := range []struct {
		name string
		o    OTLPOptions
		want string // "" accepts
	}{
		{"host:port", OTLPOptions{Endpoint: "collector.obs:4317"}, ""},
		{"https URL", OTLPOptions{Endpoint: "https://collector.obs:4318/otlp/v1/logs", Protocol: OTLPHTTP, Headers: h}, ""},
		{"plain loopback with headers", OTLPOptions{Endpoint: "127.0.0.1:4317", Insecure: true, Headers: h}, ""},
		{"plain in-cluster without headers", OTLPOptions{Endpoint: "collector.obs:4317", Insecure: true}, ""},
		{"no endpoint", OTLPOptions{}, "no endpoint"},
		{"no port", OTLPOptions{Endpoint: "collector.obs"}, "want host:port"},
		{"bad protocol", OTLPOptions{Endpoint: "c:1", Protocol: "udp"}, "neither grpc nor http/protobuf"},
		{"http without insecure", OTLPOptions{Endpoint: "http://c:4318", Protocol: OTLPHTTP}, "plain http"},
		{"https with insecure", OTLPOptions{Endpoint: "https://c:4318", Protocol: OTLPHTTP, Insecure: true}, "https but insecure"},
		{"credentials in URL", OTLPOptions{Endpoint: "https://u:pw@c:4318", Protocol: OTLPHTTP}, "no user information"},
		{"grpc with a path", OTLPOptions{Endpoint: "https://c:4317/x"}, "no path"},
		{"headers in clear", OTLPOptions{Endpoint: "collector.obs:4317", Insecure: true, Headers: h}, "plain text"},
		{"CA and insecure", OTLPOptions{Endpoint: "127.0.0.1:4317", Insecure: true, CAFile: "/ca.pem"}, "exclude each other"},
		{"missing CA file", OTLPOptions{Endpoint: "c:4317", CAFile: filepath.Join(t.TempDir(), "none.pem")}, "read CA file"},
		{"bad header name", OTLPOptions{Endpoint: "c:4317", Headers: map[string]string{"bad name": "hidden-value"}}, "not an HTTP token"},
		{"header value with newline", OTLPOptions{Endpoint: "c:4317", Headers: map[string]string{"x-key": "hidden-value\nx: y"}}, "control character"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := NewOTLPSink(tc.o)
			if s != nil {
				defer s.Close()
			}
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("refused: %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Errorf("error %v, want one containing %q", err, tc.want)
			case err != nil && (strings.Contains(err.Error(), "hidden-value") || strings.Contains(err.Error(), "pw@")):
				t.Errorf("the error shows a secret: %v", err)
			}
		})
	}
}

// TestReadOTLPHeaders: the headers file's forms and errors (file and line
// named, the value never).
func TestReadOTLPHeaders(t *testing.T) {
	for _, tc := range []struct {
		name, text string
		want       map[string]string
		err        string
	}{
		{"both forms", "Authorization: Basic dXNlcjpwYXNz\n\n# comment\napi-key=abc=:def\n", map[string]string{"authorization": "Basic dXNlcjpwYXNz", "api-key": "abc=:def"}, ""},
		{"empty", "", map[string]string{}, ""},
		{"no separator", "x-key hidden-value\n", nil, "line 1: want"},
		{"empty name", "\n: hidden-value\n", nil, "line 2: want"},
		{"empty value", "x-key:   \n", nil, "line 1: header x-key has an empty value"},
		{"twice", "a: 1\nA: hidden-value\n", nil, `line 2: header "a" given twice`},
		{"bad name", "x key: hidden-value\n", nil, "line 1: header name"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "headers")
			if err := os.WriteFile(path, []byte(tc.text), 0o600); err != nil {
				t.Fatal(err)
			}
			got, err := ReadOTLPHeaders(path)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) || !strings.Contains(err.Error(), path) {
					t.Fatalf("error %v, want one naming %s and %q", err, path, tc.err)
				}
				if strings.Contains(err.Error(), "hidden-value") {
					t.Errorf("the error shows the value: %v", err)
				}
				return
			}
			if err != nil || fmt.Sprint(got) != fmt.Sprint(tc.want) {
				t.Errorf("got %v, %v; want %v", got, err, tc.want)
			}
		})
	}
	if _, err := ReadOTLPHeaders(filepath.Join(t.TempDir(), "missing")); err == nil {
		t.Error("a missing file was accepted")
	}
}

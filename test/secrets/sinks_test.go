package secrets

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr/funcr"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/driftguard/driftguard/audit"
	"github.com/driftguard/driftguard/notify"
	"github.com/driftguard/driftguard/redact"
)

// TestEveryRecordEverySink: every type of audit record, built by a caller
// that put secret values everywhere (fields, labels, messages, errors, the
// policy input, a Guard spec's Helm values and variables), goes through
// every audit sink (JSON lines, file, Kubernetes Events on the real API
// server, notifications posted to a loopback server, and the process log
// when the Logger is closed); no byte that leaves holds a value, raw or
// base64.
func TestEveryRecordEverySink(t *testing.T) {
	values := map[string]string{"registered secret": planted("sink"), "another": planted("other")}
	redact.Secrets.Set("every-sink-test", []string{values["registered secret"], values["another"]})
	t.Cleanup(func() { redact.Secrets.Forget("every-sink-test") })
	// Digested, never registered: the Guard spec's own values.
	values["Helm values of the spec"], values["variable of the spec"] = planted("helmval"), planted("specvar")
	secret, other := values["registered secret"], values["another"]
	b64 := base64.StdEncoding.EncodeToString([]byte(secret))

	ctx := context.Background()
	recv := &receiver{}
	srv := httptest.NewServer(recv)
	defer srv.Close()
	var mu sync.Mutex
	var processLog strings.Builder
	log := funcr.New(func(prefix, args string) { mu.Lock(); processLog.WriteString(prefix + args + "\n"); mu.Unlock() }, funcr.Options{})
	var stdout bytes.Buffer
	file := filepath.Join(t.TempDir(), "audit.log")
	cs, err := kubernetes.NewForConfig(h.Cluster.Config)
	if err != nil {
		t.Fatal(err)
	}
	l := audit.NewLogger(log, 64,
		audit.NewWriterSink("stdout", &stdout),
		audit.NewFileSink(file, 1, 1),
		audit.NewEventSink(cs, "driftguard-secrets-test"),
		&notify.Sink{URL: func(context.Context) (string, error) { return srv.URL, nil }, Period: time.Nanosecond, Log: log},
	)
	runCtx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- l.Start(runCtx) }()

	name := "sink-" + strings.ToLower(secret[len(secret)-6:]) // the object, so its Events can be found
	kinds := []struct {
		typ       audit.Type
		action    string
		operation string
		rule      string
	}{
		{audit.Decision, "deny", "UPDATE", ""}, {audit.Decision, "allow", "UPDATE", ""}, {audit.Decision, "warn", "UPDATE", ""},
		{audit.Decision, "revert", "UPDATE", ""}, {audit.Decision, "deny", "CREATE", "failure-policy"},
		{audit.Drift, "revert", "DRIFT", ""}, {audit.Revert, "reverted", "REVERT", ""}, {audit.Revert, "failed", "REVERT", ""},
		{audit.Apply, "configured", "APPLY", ""}, {audit.Apply, "failed", "APPLY", ""},
		{audit.Prune, "deleted", "PRUNE", ""}, {audit.Prune, "kept", "PRUNE", ""}, {audit.Prune, "failed", "PRUNE", ""},
		{audit.Recreate, "created", "RECREATE", ""}, {audit.Error, "", "SYNC", ""}, {audit.Error, "", "RENDER", ""},
		{audit.Error, "", "", "fight-detected"}, {audit.Health, "Degraded", "", ""}, {audit.Protection, "restored", "UPDATE", ""},
	}
	for i, k := range kinds {
		r := audit.Record{
			Type: k.typ, Guard: "every-sink", User: "alice", Groups: []string{"dev", "group-" + secret}, Manager: "kubectl-" + secret,
			Operation: k.operation, Action: k.action, Rule: k.rule,
			Object: audit.Object{Version: "v1", Kind: "ConfigMap", Namespace: "default", Name: fmt.Sprintf("%s-%d", name, i)},
			Fields: []audit.Field{
				{Path: "/data/password", Desired: secret, Live: "edited-" + secret, Old: b64},
				{Path: "/metadata/labels/pw", Desired: other, Live: map[string]any{"nested": []any{secret, map[string]any{other: b64}}}},
				{Path: "/metadata/annotations/" + secret, Change: "added", Live: "note " + other},
			},
			Reason:      "the policy quotes " + secret + " and " + other,
			Source:      &audit.Source{URL: "https://git.example/infra.git", Revision: "abc1234", Path: "cm.yaml", Line: 1},
			RequestUID:  fmt.Sprintf("uid-%d", i),
			PolicyInput: json.RawMessage(fmt.Sprintf(`{"operation":"UPDATE","annotations":{"a":%q},"guardSpec":{"url":"https://git.example/infra.git","helm":{"values":{"pw":%q}},"vars":{"V":%q}}}`, secret, values["Helm values of the spec"], values["variable of the spec"])),
		}
		if k.typ == audit.Error || strings.HasSuffix(k.action, "failed") || k.rule != "" {
			r.Error = fmt.Sprintf(`ConfigMap "x" is invalid: data.password: Invalid value: %q (base64 %s)`, secret, b64)
		}
		l.Log(ctx, r)
	}
	flushCtx, stop := context.WithTimeout(ctx, time.Minute)
	defer stop()
	if err := l.Flush(flushCtx); err != nil {
		t.Fatalf("flush: %v", err)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	// After Close, a record goes to the process log.
	l.Log(ctx, audit.Record{Type: audit.Drift, Object: audit.Object{Version: "v1", Kind: "ConfigMap", Name: secret}, Reason: other})

	outs := []output{{"audit stdout", stdout.Bytes()}}
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	outs = append(outs, output{"audit file", data})
	var events corev1.EventList
	if err := h.Admin.List(ctx, &events, client.InNamespace("default")); err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, e := range events.Items {
		if strings.HasPrefix(e.InvolvedObject.Name, name) {
			b, _ := json.Marshal(e)
			outs = append(outs, output{"Event " + e.Reason, b})
			n++
		}
	}
	if n == 0 {
		t.Errorf("no Event on %s-*: the Event sink was not exercised", name)
	}
	bodies := recv.all()
	if len(bodies) < 3 {
		t.Errorf("%d notifications, want drift, sync-failed and degraded ones", len(bodies))
	}
	for i, b := range bodies {
		outs = append(outs, output{fmt.Sprintf("notification %d", i), b})
	}
	mu.Lock()
	outs = append(outs, output{"process log", []byte(processLog.String())})
	mu.Unlock()
	if !strings.Contains(processLog.String(), redact.Marker) {
		t.Errorf("the record after Close did not reach the process log:\n%s", processLog.String())
	}
	if got := strings.Count(stdout.String(), "\n"); got != len(kinds) {
		t.Errorf("stdout got %d records, want %d", got, len(kinds))
	}
	for _, l := range leaks(outs, values) {
		t.Error(l)
	}
}

package audit

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr/funcr"

	"github.com/driftguard/driftguard/redact"
)

// plantedRecord is a record of type typ with secret in every text it has,
// as a caller that did not think of it would build it.
func plantedRecord(typ Type, action, secret string) Record {
	b64 := base64.StdEncoding.EncodeToString([]byte(secret))
	return Record{
		Type: typ, Guard: "shop", User: "alice", Groups: []string{"dev", "g-" + secret}, Manager: "kubectl", Operation: "UPDATE",
		Object: Object{Version: "v1", Kind: "ConfigMap", Namespace: "shop", Name: "app"},
		Fields: []Field{
			{Path: "/data/password", Desired: secret, Live: "changed-" + secret, Old: b64},
			{Path: "/metadata/labels/l", Desired: map[string]any{"nested": []any{secret, map[string]any{secret: 1}}}},
			{Path: "/data/" + secret, Change: "added", Live: []string{secret}},
		},
		Action: action, Reason: "the policy quotes " + secret, Rule: "data.driftguard.decision",
		Source:      &Source{URL: "https://git.example/infra.git", Revision: "abc", Path: "cm.yaml", Line: 1},
		PolicyInput: json.RawMessage(fmt.Sprintf(`{"operation":"UPDATE","annotations":{"a":%q},"guardSpec":{"helm":{"values":{"pw":"helm-values-in-spec"}},"vars":{"V":"spec-var-value-1"}}}`, secret)),
		Error:       "apply failed: " + b64,
	}
}

// TestRecordsCarryNoSecret: whoever builds a record, no value the process
// registered as secret reaches a sink or the process log, raw or base64,
// for every record type; the caller's record is not changed.
func TestRecordsCarryNoSecret(t *testing.T) {
	const secret = "planted-S3cret-value"
	redact.Secrets.Set("audit-test", []string{secret})
	t.Cleanup(func() { redact.Secrets.Forget("audit-test") })

	var mu sync.Mutex
	var processLog strings.Builder
	log := funcr.New(func(prefix, args string) { mu.Lock(); processLog.WriteString(args + "\n"); mu.Unlock() }, funcr.Options{})
	var out bytes.Buffer
	l := newTestLogger(log, 16, NewWriterSink("stdout", &out))
	startLogger(t, l)
	types := []struct {
		typ    Type
		action string
	}{{Decision, "deny"}, {Decision, "allow"}, {Decision, "warn"}, {Decision, "revert"}, {Drift, ""}, {Revert, "reverted"},
		{Apply, "configured"}, {Prune, "deleted"}, {Prune, "kept"}, {Error, ""}, {Recreate, "created"}, {Health, "Degraded"}, {Protection, "restored"}}
	for _, tc := range types {
		r := plantedRecord(tc.typ, tc.action, secret)
		before := fmt.Sprintf("%#v", r)
		l.Log(context.Background(), r)
		if after := fmt.Sprintf("%#v", r); after != before {
			t.Errorf("%s: Log changed the caller's record", tc.typ)
		}
	}
	if err := flush(t, l); err != nil {
		t.Fatal(err)
	}
	// The fallback to the process log, after Close.
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	l.Log(context.Background(), plantedRecord(Drift, "", secret))

	mu.Lock()
	defer mu.Unlock()
	for name, text := range map[string]string{"sink": out.String(), "process log": processLog.String()} {
		for _, bad := range []string{secret, base64.StdEncoding.EncodeToString([]byte(secret))[:20], "helm-values-in-spec", "spec-var-value-1"} {
			if strings.Contains(text, bad) {
				t.Errorf("%s holds %q:\n%s", name, bad, text)
			}
		}
	}
	if n := strings.Count(out.String(), "\n"); n != len(types) {
		t.Errorf("sink got %d records, want %d", n, len(types))
	}
	for line := range strings.Lines(out.String()) {
		var r Record
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			t.Fatalf("a redacted record is not JSON: %v\n%s", err, line)
		}
		if !strings.Contains(r.Reason, redact.Marker) || r.Object.Name != "app" || !json.Valid(r.PolicyInput) {
			t.Errorf("record lost more than the secret: %s", line)
		}
	}
}

func BenchmarkRecordRedaction(b *testing.B) {
	vals := make([]string, 200)
	for i := range vals {
		vals[i] = fmt.Sprintf("bench-secret-value-%03d", i)
	}
	for _, active := range []bool{false, true} {
		redact.Secrets.Forget("bench")
		if active {
			redact.Secrets.Set("bench", vals)
		}
		b.Run(fmt.Sprintf("secrets=%v", active), func(b *testing.B) {
			r := plantedRecord(Decision, "deny", "not-registered-value")
			// as the webhook records it: the Guard's values already digested
			r.PolicyInput = json.RawMessage(`{"operation":"UPDATE","user":{"username":"alice","groups":["dev"]},"resource":{"version":"v1","kind":"ConfigMap","namespace":"shop","name":"app"},"drift":[{"path":"/data/password","desired":"a","live":"b"}],"guardSpec":{"url":"https://git.example/infra.git","helm":{"values":"sha256:4ddbb67bf993"},"vars":{"A":"sha256:4ddbb67bf993","B":"sha256:4ddbb67bf993"}}}`)
			r.Time = time.Now()
			b.ReportAllocs()
			for b.Loop() {
				c := r
				c.Groups = append([]string(nil), r.Groups...)
				c.Fields = append([]Field(nil), r.Fields...)
				src := *r.Source
				c.Source = &src
				withoutCredentials(&c)
				withoutSecrets(&c)
			}
		})
	}
	redact.Secrets.Forget("bench")
}

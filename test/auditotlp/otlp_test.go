// Package auditotlp runs the guard with its OTLP audit sink on, exporting
// over gRPC with TLS and a header from a headers file to an OTLP receiver
// on loopback (the official OTLP collector service on a real gRPC server),
// against a real kube-apiserver and Git server; and reads the audit file
// the guard wrote back with `driftguard audit query`.
package auditotlp

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/driftguard/driftguard/app"
	"github.com/driftguard/driftguard/audit"
	"github.com/driftguard/driftguard/test/harness"
	"github.com/driftguard/driftguard/test/otlprecv"
)

var (
	h     *harness.Harness
	recv  *otlprecv.Receiver
	token = harness.RandomToken()
)

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	var err error
	recv, err = otlprecv.Listen(otlprecv.Options{TLS: true})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer recv.Stop()
	dir, err := os.MkdirTemp("", "driftguard-otlp-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	headers := filepath.Join(dir, "headers")
	if err := os.WriteFile(headers, []byte("Authorization: Bearer "+token+"\n"), 0o600); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	h, err = harness.Start(harness.Options{Guard: func(o *app.Options) {
		o.AuditOTLPEndpoint = recv.Endpoint
		o.AuditOTLPCAFile = recv.CAFile
		o.AuditOTLPHeadersFile = headers
	}})
	if err != nil {
		fmt.Fprintln(os.Stderr, "start harness:", err)
		return 1
	}
	defer h.Stop()
	return m.Run()
}

const (
	ns       = "otlp-shop"
	password = "otlp-e2e-Passw0rd"
	attempt  = "alice-typed-this-value"
)

var files = map[string]string{
	"ns.yaml": "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: " + ns + "\n",
	"cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: web-config\n  namespace: " + ns + "\ndata:\n  value: from-git\n",
	"secret.yaml": "apiVersion: v1\nkind: Secret\nmetadata:\n  name: creds\n  namespace: " + ns +
		"\ntype: Opaque\nstringData:\n  password: " + password + "\n",
}

// TestDenialsReachTheCollector: alice's changes to a ConfigMap and a
// Secret the guard manages are denied; the receiver gets each decision as
// an OTLP log record with the attributes docs/audit.md names, the header
// from the headers file, and no secret value; the audit file holds the
// same records, and `driftguard audit query` finds them.
func TestDenialsReachTheCollector(t *testing.T) {
	repo := h.NewGuard(t, ns, false, files)
	h.WaitApplied(t, ns, repo.Initial)
	for _, args := range [][]string{
		{"patch", "configmap", "web-config", "-n", ns, "--type=merge", "-p", `{"data":{"value":"by-hand"}}`},
		{"patch", "secret", "creds", "-n", ns, "--type=merge", "-p", `{"stringData":{"password":"` + attempt + `"}}`},
	} {
		if out, err := h.Kubectl(t, args...); err == nil || !strings.Contains(out, "denied the request") {
			t.Fatalf("kubectl %s: want a denial, got %v: %s", strings.Join(args, " "), err, out)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	denial := func(name string) func(otlprecv.Log) bool {
		return func(l otlprecv.Log) bool {
			return l.Attrs["driftguard.type"] == "decision" && l.Attrs["driftguard.action"] == "deny" &&
				l.Attrs["driftguard.object.name"] == name && l.Attrs["driftguard.user"] == "alice"
		}
	}
	cm := recv.Wait(ctx, t, "the ConfigMap's denial", denial("web-config"))
	recv.Wait(ctx, t, "the Secret's denial", denial("creds"))
	checkDenial(t, cm, repo)

	// The same record went to stdout.
	uid, _ := cm.Attrs["driftguard.request_uid"].(string)
	if uid == "" || len(h.Audit.Find(func(r audit.Record) bool { return r.RequestUID == uid && r.Action == "deny" })) != 1 {
		t.Errorf("the stdout sink has no decision of request %q", uid)
	}
	text := recv.Text()
	for _, bad := range []string{password, base64.StdEncoding.EncodeToString([]byte(password)), attempt, base64.StdEncoding.EncodeToString([]byte(attempt)), token} {
		if strings.Contains(text, bad) {
			t.Errorf("the collector received %q", bad)
		}
	}
	checkQuery(t)
}

func checkDenial(t *testing.T, got otlprecv.Log, repo *harness.Repo) {
	t.Helper()
	want := map[string]any{
		"driftguard.guard": ns, "driftguard.object.version": "v1", "driftguard.object.kind": "ConfigMap",
		"driftguard.object.namespace": ns, "driftguard.source.url": repo.URL, "driftguard.source.revision": repo.Initial,
		"driftguard.source.path": "cm.yaml", "driftguard.operation": "UPDATE",
	}
	for k, v := range want {
		if got.Attrs[k] != v {
			t.Errorf("attribute %s = %v, want %v", k, got.Attrs[k], v)
		}
	}
	fields, _ := got.Attrs["driftguard.fields"].([]any)
	if b, _ := json.Marshal(fields); len(fields) != 1 || !strings.Contains(string(b), `"path":"/data/value"`) || !strings.Contains(string(b), `by-hand`) {
		t.Errorf("driftguard.fields = %s", b)
	}
	if got.Record.GetSeverityText() != "WARN" || got.Record.GetEventName() != "driftguard.audit.decision" {
		t.Errorf("severity %q, event name %q", got.Record.GetSeverityText(), got.Record.GetEventName())
	}
	if got.Resource["service.name"] != "driftguard" {
		t.Errorf("resource %v", got.Resource)
	}
	if a := got.Headers["authorization"]; len(a) != 1 || a[0] != "Bearer "+token {
		t.Errorf("the header from the headers file did not arrive: %d values", len(a))
	}
}

// checkQuery runs `driftguard audit query` over the file the guard wrote.
func checkQuery(t *testing.T) {
	t.Helper()
	bin, err := harness.Binary()
	if err != nil {
		t.Fatal(err)
	}
	query := func(args ...string) (string, string) {
		cmd := exec.Command(bin, append([]string{"audit", "query", "--file", h.AuditFile}, args...)...)
		var out, errOut harness.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errOut
		if err := cmd.Run(); err != nil {
			var ee *exec.ExitError
			if errors.As(err, &ee) {
				t.Fatalf("audit query %v: exit %d: %s", args, ee.ExitCode(), errOut.String())
			}
			t.Fatal(err)
		}
		return out.String(), errOut.String()
	}
	out, errOut := query("--since", "1h", "--user", "alice", "--guard", ns, "-o", "json")
	var names []string
	for line := range strings.Lines(out) {
		var r audit.Record
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			t.Fatalf("-o json: %v: %s", err, line)
		}
		if r.User != "alice" || r.Guard != ns {
			t.Errorf("a record that does not match: %s", line)
		}
		names = append(names, r.Object.Name)
	}
	if !strings.Contains(strings.Join(names, " "), "web-config") || !strings.Contains(strings.Join(names, " "), "creds") || errOut != "" {
		t.Errorf("query found %v (stderr %q), want the denials of web-config and creds", names, errOut)
	}
	out, _ = query("--since", "1h", "--action", "deny", "--kind", "Secret", "--namespace", ns, "--name", "creds")
	if lines := strings.Split(strings.TrimSpace(out), "\n"); len(lines) < 2 || strings.Join(strings.Fields(lines[1])[1:4], " ") != "decision deny alice" {
		t.Errorf("table:\n%s", out)
	}
	if strings.Contains(out, password) || strings.Contains(out, attempt) {
		t.Errorf("the audit file holds a secret value:\n%s", out)
	}
}

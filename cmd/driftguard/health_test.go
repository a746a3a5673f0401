package main

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// runHealthCmd runs "driftguard health args..." with stdin and returns its
// output and error.
func runHealthCmd(t *testing.T, stdin string, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	cmd := newRootCommand()
	var out, errOut bytes.Buffer
	cmd.SetIn(strings.NewReader(stdin))
	cmd.SetOut(&out)
	cmd.SetErr(&errOut)
	cmd.SetArgs(append([]string{"health"}, args...))
	err = cmd.Execute()
	return out.String(), errOut.String(), err
}

func healthFixture(name string) string { return filepath.Join("..", "..", "health", "testdata", name) }

const shopHealth = `Deployment             shop/web        Healthy      3 of 3 replicas ready
Service                shop/web        Healthy      3 ready endpoints
EndpointSlice          shop/web-mvsh8  Healthy      exists
Job                    shop/migrate    Degraded     failed: BackoffLimitExceeded: Job has reached the specified backoff limit
PersistentVolumeClaim  shop/data       Progressing  pending: waiting for a volume
Database               shop/orders     Progressing  creating primary instance
`

func writeHealthRule(t *testing.T, src string) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "health.rego"), []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

func writeJSON(t *testing.T) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "cm.json")
	src := `{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "web-config", "namespace": "shop"}, "data": {"a": "b"}}`
	if err := os.WriteFile(p, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestHealthCommand(t *testing.T) {
	list := healthFixture("list-shop.yaml")
	listYAML, err := os.ReadFile(list)
	if err != nil {
		t.Fatal(err)
	}
	databaseRule := writeHealthRule(t, `package driftguard
health := {"state": "Healthy", "message": "primary up"} if input.object.kind == "Database"
`)
	badRule := writeHealthRule(t, `package driftguard
health := {"state": "Fine"} if input.object.kind == "Database"
`)
	for _, tc := range []struct {
		name       string
		stdin      string
		args       []string
		wantOut    string
		wantStderr string
		wantExit   int // -1: no error
	}{
		{"a List", "", []string{"-f", list}, shopHealth, "", -1},
		{"degraded is informational", "", []string{"--filename", list}, shopHealth, "", -1},
		{"fail on degraded", "", []string{"-f", list, "--fail-on-degraded"}, shopHealth, "", 1},
		{"fail on degraded, none degraded", "", []string{"-f", healthFixture("deployment-healthy.yaml"), "--fail-on-degraded"},
			"Deployment  shop/web  Healthy  3 of 3 replicas ready\n", "", -1},
		{"several documents with endpoint slices", "", []string{"-f", healthFixture("service-clusterip-endpoints-not-ready.yaml")},
			"Service        shop/web        Progressing  none of 2 endpoints ready\nEndpointSlice  shop/web-mvsh8  Healthy      exists\n", "", -1},
		{"standard input", string(listYAML), []string{"-f", "-"}, shopHealth, "", -1},
		{"JSON", "", []string{"-f", writeJSON(t)}, "ConfigMap  shop/web-config  Healthy  exists\n", "", -1},
		{"cluster-scoped", "", []string{"-f", healthFixture("namespace-active.yaml")}, "Namespace  shop  Healthy  active\n", "", -1},
		{"custom rule", "", []string{"-f", list, "--policy", databaseRule},
			strings.Replace(shopHealth, "Progressing  creating primary instance", "Healthy      primary up", 1), "", -1},
		{"custom rule of a wrong shape falls back", "", []string{"-f", list, "--policy", badRule},
			shopHealth, `driftguard: custom health of Database shop/orders: health rules `, -1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, stderr, err := runHealthCmd(t, tc.stdin, tc.args...)
			if out != tc.wantOut {
				t.Errorf("stdout:\n%s\nwant:\n%s", out, tc.wantOut)
			}
			if tc.wantStderr == "" && stderr != "" || !strings.Contains(stderr, tc.wantStderr) {
				t.Errorf("stderr = %q, want %q", stderr, tc.wantStderr)
			}
			var ec exitCode
			switch {
			case tc.wantExit < 0 && err != nil:
				t.Errorf("error = %v, want none", err)
			case tc.wantExit >= 0 && (!errors.As(err, &ec) || int(ec) != tc.wantExit):
				t.Errorf("error = %v, want exit status %d", err, tc.wantExit)
			}
		})
	}
}

func TestHealthCommandBadInput(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	noKind := write("nokind.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n---\n# second\napiVersion: v1\nmetadata: {name: b}\n")
	badItem := write("baditem.yaml", "apiVersion: v1\nkind: List\nitems:\n- apiVersion: v1\n  kind: ConfigMap\n  metadata: {name: a}\n- apiVersion: v1\n  kind: ConfigMap\n  metadata: {}\n")
	scalarItem := write("scalaritem.yaml", "apiVersion: v1\nkind: List\nitems:\n- hello\n")
	empty := write("empty.yaml", "# nothing here\n---\n")
	notYAML := write("bad.yaml", "apiVersion: v1\nkind: [ConfigMap\n")
	scalar := write("scalar.yaml", "just a string\n")
	compileErr := writeHealthRule(t, "package driftguard\nhealth := {\"state\": nope}\n")
	for _, tc := range []struct {
		name    string
		args    []string
		wantErr string
	}{
		{"no file", nil, "-f FILE is required"},
		{"missing file", []string{"-f", filepath.Join(dir, "absent.yaml")}, "health: read " + filepath.Join(dir, "absent.yaml")},
		{"object without kind", []string{"-f", noKind}, noKind + ":6: object lacks kind"},
		{"List item without name", []string{"-f", badItem}, badItem + ":7: object lacks metadata.name"},
		{"List item not an object", []string{"-f", scalarItem}, scalarItem + ":4: document is a string, not an object"},
		{"no objects", []string{"-f", empty}, empty + " holds no objects"},
		{"not YAML", []string{"-f", notYAML}, notYAML + ":2: did not find expected ',' or ']'"},
		{"not an object", []string{"-f", scalar}, scalar + ":1: document is a string, not an object"},
		{"policy does not compile", []string{"-f", healthFixture("configmap.yaml"), "--policy", compileErr}, filepath.Join(compileErr, "health.rego") + ":2"},
		{"policy without a health rule", []string{"-f", healthFixture("configmap.yaml"), "--policy", writeHealthRule(t, "package driftguard\nx := 1\n")}, "no rule defines data.driftguard.health"},
		{"unknown flag", []string{"-f", healthFixture("configmap.yaml"), "--fail-on-degradedd"}, "unknown flag"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, _, err := runHealthCmd(t, "", tc.args...)
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("error = %v, want one containing %q", err, tc.wantErr)
			}
			if out != "" {
				t.Errorf("stdout = %q, want nothing on error", out)
			}
		})
	}
}

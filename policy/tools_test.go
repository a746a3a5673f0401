package policy

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/go-logr/logr"
)

func TestRegoTests(t *testing.T) {
	failingDir := t.TempDir()
	writeFile(t, filepath.Join(failingDir, "decision.rego"), warnPolicy)
	writeFile(t, filepath.Join(failingDir, "decision_test.rego"), `package driftguard_test

import data.driftguard

test_warns if driftguard.decision.action == "warn"

test_denies if driftguard.decision.action == "deny"

test_errors if {
	o := {k: v | some [k, v] in [["a", 1], ["a", 2]]}
	o.a == 1
}

todo_test_later if false
`)
	brokenDir := t.TempDir()
	writeFile(t, filepath.Join(brokenDir, "decision.rego"), "package driftguard\n\ndecision := {\n")
	noTestsDir := t.TempDir()
	writeFile(t, filepath.Join(noTestsDir, "decision.rego"), warnPolicy)

	tests := []struct {
		name       string
		dir        string
		verbose    bool
		wantPassed int
		wantFailed int
		wantErr    string
		wantOut    []string
	}{
		{"default policy", "default", false, -1, 0, "", []string{"PASS  data.driftguard_test.test_break_glass_allowed_with_reason", "PASS: "}},
		{"default policy verbose", "default", true, -1, 0, "", []string{"PASS  data.driftguard_test.test_drift_reverted ("}},
		{"failing test", failingDir, true, 1, 2, "", []string{
			"PASS  data.driftguard_test.test_warns",
			"FAIL  data.driftguard_test.test_denies (",
			"decision_test.rego:7",
			"SKIP  data.driftguard_test.todo_test_later",
			"ERROR data.driftguard_test.test_errors: ",
			"FAIL: 1/3 (1 skipped)",
		}},
		{"policy does not compile", brokenDir, false, 0, 0, "decision.rego:", nil},
		{"no tests", noTestsDir, false, 0, 0, "no tests found", []string{"no tests"}},
		{"missing dir", filepath.Join(noTestsDir, "nope"), false, 0, 0, "nope", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out bytes.Buffer
			passed, failed, err := Test(context.Background(), tt.dir, &out, tt.verbose)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want %q", err, tt.wantErr)
				}
			} else if err != nil {
				t.Fatalf("Test: %v\n%s", err, out.String())
			}
			if tt.wantPassed >= 0 && passed != tt.wantPassed {
				t.Errorf("passed = %d, want %d", passed, tt.wantPassed)
			}
			if tt.wantPassed < 0 && passed == 0 {
				t.Errorf("passed = 0, want some")
			}
			if failed != tt.wantFailed {
				t.Errorf("failed = %d, want %d\n%s", failed, tt.wantFailed, out.String())
			}
			for _, s := range tt.wantOut {
				if !strings.Contains(out.String(), s) {
					t.Errorf("output lacks %q:\n%s", s, out.String())
				}
			}
		})
	}
}

func TestDefaultModules(t *testing.T) {
	mods := DefaultModules()
	for _, name := range []string{"decision.rego", "decision_test.rego"} {
		if mods[name] == "" {
			t.Errorf("DefaultModules() lacks %s", name)
		}
	}
	// The embedded copy is the one in policy/default.
	src, err := os.ReadFile(filepath.Join("default", "decision.rego"))
	if err != nil || string(src) != mods["decision.rego"] {
		t.Errorf("embedded decision.rego differs from default/decision.rego (%v)", err)
	}
}

func TestEvalFile(t *testing.T) {
	dir := t.TempDir()
	jsonIn := filepath.Join(dir, "update.json")
	writeFile(t, jsonIn, `{
  "operation": "UPDATE",
  "user": {"username": "alice", "groups": ["dev"], "serviceAccount": false},
  "resource": {"group": "apps", "version": "v1", "kind": "Deployment", "namespace": "shop", "name": "web"},
  "object": {"spec": {"replicas": 5}}, "oldObject": {"spec": {"replicas": 3}}, "desired": {"spec": {"replicas": 3}},
  "drift": [{"path": "/spec/replicas", "desired": 3, "live": 5}],
  "source": {"url": "https://git.example/infra.git", "revision": "9f2c1e0", "path": "apps/web/deployment.yaml", "line": 1},
  "annotations": {"driftguard.io/break-glass": "INC-1234: scale for sale"},
  "dryRun": false
}`)
	yamlIn := filepath.Join(dir, "drift.yaml")
	writeFile(t, yamlIn, `operation: DRIFT
user:
  username: alice
  groups: [dev]
resource: {group: apps, version: v1, kind: Deployment, namespace: shop, name: web}
drift:
  - path: /spec/replicas
    desired: 3
    live: 5
source: {url: "https://git.example/infra.git", revision: 9f2c1e0, path: apps/web/deployment.yaml, line: 1}
`)
	unknownField := filepath.Join(dir, "typo.yaml")
	writeFile(t, unknownField, "operation: UPDATE\nusr: {username: alice}\n")
	empty := filepath.Join(dir, "empty.json")
	writeFile(t, empty, "\n")
	badYAML := filepath.Join(dir, "bad.yaml")
	writeFile(t, badYAML, "operation: [UPDATE\n")

	policyDir := filepath.Join(dir, "policy")
	writeFile(t, filepath.Join(policyDir, "decision.rego"), `package driftguard

decision := {"action": "warn", "reason": sprintf("%v replicas", [input.object.spec.replicas])}
`)

	tests := []struct {
		name      string
		policyDir string
		input     string
		want      Decision
		wantErr   string
	}{
		{"json, default policy", "", jsonIn, Decision{Action: Deny, Rule: "managed-by-git"}, ""},
		{"yaml drift, default policy", "", yamlIn, Decision{Action: Revert, Rule: "self-heal"}, ""},
		{"json, custom policy", policyDir, jsonIn, Decision{Action: Warn, Reason: "5 replicas"}, ""},
		{"unknown field", "", unknownField, Decision{}, `unknown field "usr"`},
		{"empty file", "", empty, Decision{}, "empty"},
		{"bad yaml", "", badYAML, Decision{}, "bad.yaml"},
		{"missing input", "", filepath.Join(dir, "none.json"), Decision{}, "none.json"},
		{"missing policy dir", filepath.Join(dir, "none"), jsonIn, Decision{}, "none"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d, err := EvalFile(context.Background(), tt.policyDir, tt.input)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if d.Action != tt.want.Action || d.Rule != tt.want.Rule || (tt.want.Reason != "" && d.Reason != tt.want.Reason) {
				t.Fatalf("EvalFile = %+v, want %+v", d, tt.want)
			}
		})
	}
}

func TestExamplePolicies(t *testing.T) {
	dirs, err := filepath.Glob(filepath.Join("..", "examples", "policies", "*", "decision.rego"))
	if err != nil {
		t.Fatal(err)
	}
	if len(dirs) < 2 {
		t.Fatalf("found %d example policies, want at least 2", len(dirs))
	}
	for _, file := range dirs {
		dir := filepath.Dir(file)
		t.Run(filepath.Base(dir), func(t *testing.T) {
			var out bytes.Buffer
			passed, failed, err := Test(context.Background(), dir, &out, false)
			if err != nil || failed != 0 || passed == 0 {
				t.Fatalf("Test(%s) = %d passed, %d failed, %v\n%s", dir, passed, failed, err, out.String())
			}
			e := NewEngine(testConfig, logr.Discard())
			if err := e.LoadDir(dir); err != nil {
				t.Fatalf("LoadDir: %v", err)
			}
			if _, err := e.Decide(context.Background(), baseInput()); err != nil {
				t.Fatalf("Decide: %v", err)
			}
		})
	}
}

func TestBundles(t *testing.T) {
	dir := t.TempDir()
	for _, f := range []string{"a/p.rego", "a/p_test.rego", "b/nested/q.rego", ".hidden/r.rego", "c/readme.md"} {
		if err := os.MkdirAll(filepath.Join(dir, filepath.Dir(f)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, f), []byte("package driftguard\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err := Bundles(dir)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{filepath.Join(dir, "a"), filepath.Join(dir, "b/nested")}
	if !slices.Equal(got, want) {
		t.Fatalf("bundles %v, want %v", got, want)
	}
	if got, _ := Bundles(filepath.Join(dir, "a")); !slices.Equal(got, []string{filepath.Join(dir, "a")}) {
		t.Fatalf("a policy folder is one bundle: %v", got)
	}
}

package main

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/driftguard/driftguard/policy"
)

// TestPolicyReplay: recorded decisions are re-decided with a new policy and
// only those that change are printed, with exit code 1.
func TestPolicyReplay(t *testing.T) {
	dir := t.TempDir()
	// The new policy: the default, plus "oncall may scale".
	newPolicy := filepath.Join(dir, "policy")
	if err := os.MkdirAll(newPolicy, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, src := range policy.DefaultModules() {
		if strings.HasSuffix(name, "_test.rego") {
			continue
		}
		src = strings.Replace(src, "decision := {\n", `decision := {"action": "allow", "reason": "on-call may scale", "rule": "oncall-scale"} if {
	input.subResource == "scale"
	"oncall" in input.user.groups
} else := {
`, 1)
		if err := os.WriteFile(filepath.Join(newPolicy, filepath.Base(name)), []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	input := func(user, group, sub string) string {
		return `{"operation":"UPDATE","user":{"username":"` + user + `","groups":["` + group + `"],"serviceAccount":false},"resource":{"group":"apps","version":"v1","kind":"Deployment","namespace":"shop","name":"web"},"subResource":"` + sub + `","drift":[{"path":"/spec/replicas","desired":3,"live":5}],"source":{"url":"u","revision":"r","path":"p","line":1},"dryRun":false,"guard":"shop"}`
	}
	log := strings.Join([]string{
		`{"time":"2026-12-02T10:00:00Z","type":"decision","user":"bob","operation":"UPDATE/scale","object":{"group":"apps","version":"v1","kind":"Deployment","namespace":"shop","name":"web"},"action":"deny","rule":"managed-by-git","policyInput":` + input("bob", "oncall", "scale") + `}`,
		`{"time":"2026-12-02T10:00:01Z","type":"decision","user":"eve","operation":"UPDATE/scale","object":{"group":"apps","version":"v1","kind":"Deployment","namespace":"shop","name":"web"},"action":"warn","policyAction":"deny","rule":"managed-by-git","policyInput":` + input("eve", "dev", "scale") + `}`,
		`not an audit record`,
		`{"time":"2026-12-02T10:00:02Z","type":"drift","object":{"kind":"ConfigMap","name":"x"}}`,
		`{"time":"2026-12-02T10:00:03Z","type":"decision","user":"old","action":"deny","rule":"managed-by-git"}`,
	}, "\n")
	auditFile := filepath.Join(dir, "audit.jsonl")
	if err := os.WriteFile(auditFile, []byte(log), 0o644); err != nil {
		t.Fatal(err)
	}

	out, err := runCLI(t, "policy", "replay", "--audit", auditFile, "--policy", newPolicy)
	var ec exitCode
	if !errors.As(err, &ec) || ec != 1 {
		t.Fatalf("want exit code 1 for a changed decision, got %v\n%s", err, out)
	}
	if !strings.Contains(out, "bob UPDATE/scale Deployment shop/web  deny(managed-by-git) -> allow(oncall-scale)  on-call may scale") {
		t.Errorf("changed decision not printed:\n%s", out)
	}
	if strings.Contains(out, "eve") {
		t.Errorf("eve's decision (deny before enforcement) does not change and must not be printed:\n%s", out)
	}
	if !strings.Contains(out, "2 decisions replayed, 1 would change, 1 records without a recorded input skipped") {
		t.Errorf("summary:\n%s", out)
	}

	// The default policy decides as recorded: nothing changes, exit 0.
	defaultDir := filepath.Join(dir, "default")
	if err := os.MkdirAll(defaultDir, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, src := range policy.DefaultModules() {
		if err := os.WriteFile(filepath.Join(defaultDir, filepath.Base(name)), []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if out, err := runCLI(t, "policy", "replay", "--audit", auditFile, "--policy", defaultDir); err != nil || !strings.Contains(out, "0 would change") {
		t.Fatalf("replay with the recorded policy: %v\n%s", err, out)
	}
}

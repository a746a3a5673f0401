package main

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func runCLI(t *testing.T, args ...string) (string, error) {
	t.Helper()
	cmd := newRootCommand()
	var out bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetErr(&out)
	cmd.SetArgs(args)
	err := cmd.Execute()
	return out.String(), err
}

func TestPolicyCommands(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad")
	if err := os.MkdirAll(bad, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(bad, "x.rego"), []byte("package driftguard\n\ndecision := {\"action\": \n"), 0o644); err != nil {
		t.Fatal(err)
	}
	ugly := filepath.Join(dir, "ugly.rego")
	if err := os.WriteFile(ugly, []byte("package driftguard\ndecision := {\"action\":\"allow\"}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	input := filepath.Join(dir, "input.json")
	if err := os.WriteFile(input, []byte(`{"operation":"UPDATE","user":{"username":"alice"},"resource":{"kind":"Deployment","name":"web"},"drift":[{"path":"/spec/replicas","desired":3,"live":5}]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	breakGlass := filepath.Join(dir, "break-glass.json")
	if err := os.WriteFile(breakGlass, []byte(`{"operation":"UPDATE","user":{"username":"sam","groups":["sre"]},"annotations":{"driftguard.io/break-glass":"INC-9"},"resource":{"kind":"Deployment","name":"web"},"drift":[{"path":"/spec/replicas","desired":3,"live":5}]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		args    []string
		out     string
		errText string
		code    int
	}{
		{"check default", []string{"policy", "check", "../../policy/default"}, "ok: policy revision", "", 0},
		{"check default: rule by rule in the API server", []string{"policy", "check", "../../policy/default"}, "compiled  managed-by-git", "", 0},
		{"check default: restores-git is the webhook's", []string{"policy", "check", "../../policy/default"}, "webhook   restores-git", "", 0},
		{"check custom: not compiled", []string{"policy", "check", "../../examples/policies/sre-scaling"}, "not compiled: a custom policy", "", 0},
		{"check broken", []string{"policy", "check", bad}, "", "x.rego:4", 0},
		{"test default", []string{"policy", "test", "../../policy/default"}, "PASS", "", 0},
		{"test a folder of alternative policies: each on its own", []string{"policy", "test", "../../examples/policies"}, "== ../../examples/policies/sre-scaling", "", 0},
		{"eval default denies", []string{"policy", "eval", "--input", input}, `"action": "deny"`, "", 0},
		{"eval break-glass without the guard's groups: denied", []string{"policy", "eval", "--input", breakGlass}, `"action": "deny"`, "", 0},
		{"eval break-glass with --break-glass-groups", []string{"policy", "eval", "--input", breakGlass, "--break-glass-groups", "sre"}, `"rule": "break-glass"`, "", 0},
		{"eval the guard's identity with --guard-users", []string{"policy", "eval", "--input", input, "--guard-users", "alice"}, `"rule": "guard-identity"`, "", 0},
		{"fmt lists unformatted", []string{"policy", "fmt", ugly}, "ugly.rego", "", 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, err := runCLI(t, tt.args...)
			var ec exitCode
			switch {
			case tt.code != 0:
				if !errors.As(err, &ec) || int(ec) != tt.code {
					t.Fatalf("want exit %d, got %v", tt.code, err)
				}
			case tt.errText != "":
				if err == nil || !strings.Contains(err.Error(), tt.errText) {
					t.Fatalf("want error with %q, got %v", tt.errText, err)
				}
			case err != nil:
				t.Fatalf("unexpected error: %v\n%s", err, out)
			}
			if !strings.Contains(out, tt.out) {
				t.Fatalf("output lacks %q:\n%s", tt.out, out)
			}
		})
	}
}

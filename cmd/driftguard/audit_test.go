package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestAuditTail(t *testing.T) {
	log := `{"level":"info","msg":"not a record"}
{"time":"2026-12-02T10:00:00Z","type":"decision","guard":"shop","user":"alice","operation":"UPDATE/scale","object":{"group":"apps","version":"v1","kind":"Deployment","namespace":"shop","name":"web"},"fields":[{"path":"/spec/replicas","desired":3,"live":5}],"action":"deny","reason":"no","rule":"managed-by-git"}
{"time":"2026-12-02T10:00:01Z","type":"drift","guard":"shop","user":"kubectl-patch","manager":"kubectl-patch","object":{"version":"v1","kind":"ConfigMap","namespace":"shop","name":"cfg"},"fields":[{"path":"/data/a","desired":"x","live":"y"}],"action":"revert"}
{"time":"2026-12-02T10:00:02Z","type":"revert","guard":"other","object":{"version":"v1","kind":"ConfigMap","namespace":"db","name":"cfg"}}`
	file := filepath.Join(t.TempDir(), "audit.log")
	if err := os.WriteFile(file, []byte(log), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name  string
		args  []string
		lines int
		want  string
	}{
		{"all records, not other lines", nil, 3, "/spec/replicas: 3 → 5"},
		{"by user", []string{"--user", "alice"}, 1, "(managed-by-git: no)"},
		{"by object", []string{"--object", "configmap shop/"}, 1, "/data/a"},
		{"by type and guard", []string{"--type", "revert", "--guard", "other"}, 1, "ConfigMap db/cfg"},
		{"by action", []string{"--action", "deny"}, 1, "Deployment shop/web"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, err := runCLI(t, append([]string{"audit", "tail", file}, tt.args...)...)
			if err != nil {
				t.Fatal(err)
			}
			lines := strings.Split(strings.TrimSpace(out), "\n")
			if len(lines) != tt.lines || !strings.Contains(out, tt.want) {
				t.Fatalf("got %d lines, want %d with %q:\n%s", len(lines), tt.lines, tt.want, out)
			}
		})
	}
}

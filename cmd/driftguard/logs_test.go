package main

import (
	"strings"
	"testing"
)

// TestFilterGuardLogs: which lines of the guard's log logs --guard keeps.
// The lines have the shapes the guard writes: its reconciler's and source
// follower's (key guard), controller-runtime's (key Guard, an object
// reference) and audit records (key guard).
func TestFilterGuardLogs(t *testing.T) {
	lines := []string{
		`{"level":"info","ts":1764812345.1,"msg":"following a Guard's source for the webhook","guard":"shop","revision":"abc","objects":3}`,
		`{"level":"error","ts":1764812345.2,"msg":"Reconciler error","controller":"guard","Guard":{"name":"shop"},"name":"shop","reconcileID":"x","error":"boom"}`,
		`{"type":"drift","guard":"shop","user":"alice","object":{"kind":"ConfigMap","name":"settings"}}`,
		`{"level":"info","ts":1764812345.3,"msg":"fetched","guard":"shopfront","revision":"def"}`,
		`{"level":"info","ts":1764812345.4,"msg":"Starting workers","controller":"guard","worker count":4}`,
		`{"level":"info","msg":"not a string","guard":{"name":"shop"}}`,
		`{"level":"info","msg":"upper case key is not ours","GUARD":"shop"}`,
		`I1204 01:00:00.000000       1 leaderelection.go:257] attempting to acquire leader lease driftguard-system/driftguard... shop`,
		``,
	}
	in := strings.Join(lines, "\n") + "\n"
	for _, tt := range []struct {
		guard string
		want  []int
	}{
		{"shop", []int{0, 1, 2}},
		{"shopfront", []int{3}},
		{"sho", nil},
		{"", []int{0, 1, 2, 3, 4, 5, 6, 7, 8}},
	} {
		t.Run(tt.guard, func(t *testing.T) {
			var out strings.Builder
			if err := filterGuardLogs(strings.NewReader(in), &out, tt.guard); err != nil {
				t.Fatal(err)
			}
			var want strings.Builder
			for _, i := range tt.want {
				want.WriteString(lines[i] + "\n")
			}
			if out.String() != want.String() {
				t.Errorf("--guard %q kept:\n%s\nwant:\n%s", tt.guard, out.String(), want.String())
			}
		})
	}
}

// TestFilterGuardLogsLongLine: a line longer than maxLogLine ends the
// stream with an error rather than being cut.
func TestFilterGuardLogsLongLine(t *testing.T) {
	long := `{"guard":"shop","msg":"` + strings.Repeat("x", maxLogLine) + `"}` + "\n"
	var out strings.Builder
	err := filterGuardLogs(strings.NewReader(`{"guard":"shop"}`+"\n"+long), &out, "shop")
	if err == nil || !strings.Contains(err.Error(), "read log") {
		t.Fatalf("err = %v", err)
	}
	if out.String() != `{"guard":"shop"}`+"\n" {
		t.Errorf("kept %q", out.String())
	}
}

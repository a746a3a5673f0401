package main

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/driftguard/driftguard/audit"
)

// queryNow is "now" for the table tests.
var queryNow = time.Date(2026, 12, 4, 12, 0, 0, 0, time.UTC)

func recLine(t *testing.T, r audit.Record) string {
	t.Helper()
	b, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	return string(b) + "\n"
}

// queryFixture writes an audit file, a rotated file from an hour and a
// half ago and a compressed one from three days ago, with malformed lines.
func queryFixture(t *testing.T) (dir, file string) {
	t.Helper()
	dir = t.TempDir()
	file = filepath.Join(dir, "audit.log")
	at := func(ago time.Duration) time.Time { return queryNow.Add(-ago) }
	deploy := audit.Object{Group: "apps", Version: "v1", Kind: "Deployment", Namespace: "shop", Name: "web"}
	cm := audit.Object{Version: "v1", Kind: "ConfigMap", Namespace: "db", Name: "cfg"}
	old := recLine(t, audit.Record{Time: at(73 * time.Hour), Type: audit.Decision, Guard: "shop", User: "alice", Object: deploy, Action: "deny"})
	rotated := recLine(t, audit.Record{Time: at(2 * time.Hour), Type: audit.Drift, Guard: "shop", User: "bob", Object: deploy,
		Fields: []audit.Field{{Path: "/spec/replicas", Desired: 2.0, Live: 5.0}}}) +
		"not json at all\n" +
		recLine(t, audit.Record{Time: at(100 * time.Minute), Type: audit.Revert, Guard: "shop", Object: deploy, Action: "reverted"})
	current := recLine(t, audit.Record{Time: at(50 * time.Minute), Type: audit.Decision, Guard: "shop", User: "alice", Manager: "kubectl-edit",
		Object: deploy, Action: "deny", Rule: "managed-by-git", Reason: "owned by Git"}) +
		`{"level":"info","msg":"a log line"}` + "\n" +
		recLine(t, audit.Record{Time: at(20 * time.Minute), Type: audit.Decision, Guard: "db", User: "alice", Object: cm, Action: "allow"}) +
		recLine(t, audit.Record{Time: at(10 * time.Minute), Type: audit.Apply, Guard: "db", Object: cm, Action: "configured"}) +
		`{"time":"2026-12-04T11:59:00Z","type":"dec` // being written
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	if _, err := zw.Write([]byte(old)); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	for name, data := range map[string][]byte{
		"audit.log": []byte(current),
		"audit-" + at(90*time.Minute).Format(rotatedLayout) + ".log":  []byte(rotated),
		"audit-" + at(72*time.Hour).Format(rotatedLayout) + ".log.gz": gz.Bytes(),
		"other-2026-12-04T10-00-00.000.log":                           []byte("not ours\n"),
	} {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return dir, file
}

func TestAuditQuery(t *testing.T) {
	_, file := queryFixture(t)
	tests := []struct {
		name      string
		q         queryFlags
		want      []string // types/actions of the records found, in order
		malformed int
	}{
		{"everything, rotated files first", queryFlags{}, []string{"decision/deny", "drift/", "revert/reverted", "decision/deny", "decision/allow", "apply/configured"}, 3},
		{"since 1h", queryFlags{since: "1h"}, []string{"decision/deny", "decision/allow", "apply/configured"}, 2},
		{"since 1h, alice, shop", queryFlags{since: "1h", user: "alice", guard: "shop"}, []string{"decision/deny"}, 2},
		{"user matches the field manager", queryFlags{user: "kubectl-edit"}, []string{"decision/deny"}, 3},
		{"since 2h skips the rotated file's older records", queryFlags{since: "2h"}, []string{"drift/", "revert/reverted", "decision/deny", "decision/allow", "apply/configured"}, 3},
		{"days", queryFlags{since: "4d", user: "alice", action: "DENY"}, []string{"decision/deny", "decision/deny"}, 3},
		{"until", queryFlags{until: "30m", since: "2d"}, []string{"drift/", "revert/reverted", "decision/deny"}, 3},
		{"RFC3339", queryFlags{since: "2026-12-04T11:00:00Z", until: "2026-12-04T11:45:00Z"}, []string{"decision/deny", "decision/allow"}, 2},
		{"kind, namespace, name", queryFlags{kind: "configmap", namespace: "db", name: "cfg"}, []string{"decision/allow", "apply/configured"}, 3},
		{"type", queryFlags{typ: "drift"}, []string{"drift/"}, 3},
		{"nothing", queryFlags{guard: "none"}, nil, 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.q.output = "json"
			var out, errOut bytes.Buffer
			if err := runAuditQuery(&out, &errOut, []string{file}, tt.q, queryNow); err != nil {
				t.Fatal(err)
			}
			var got []string
			for line := range strings.Lines(out.String()) {
				var r audit.Record
				if err := json.Unmarshal([]byte(line), &r); err != nil {
					t.Fatalf("-o json line is not a record: %v: %s", err, line)
				}
				got = append(got, string(r.Type)+"/"+r.Action)
			}
			if fmt.Sprint(got) != fmt.Sprint(tt.want) {
				t.Errorf("got %v, want %v", got, tt.want)
			}
			if want := fmt.Sprintf("%d malformed lines skipped", tt.malformed); !strings.Contains(errOut.String(), want) {
				t.Errorf("stderr lacks %q:\n%s", want, errOut.String())
			}
		})
	}
}

// TestAuditQueryMessages: malformed lines are named by file and line; bad
// flags and files are errors naming them; the table has the columns.
func TestAuditQueryMessages(t *testing.T) {
	dir, file := queryFixture(t)
	var out, errOut bytes.Buffer
	if err := runAuditQuery(&out, &errOut, []string{file}, queryFlags{output: "table"}, queryNow); err != nil {
		t.Fatal(err)
	}
	rotated := filepath.Join(dir, "audit-"+queryNow.Add(-90*time.Minute).Format(rotatedLayout)+".log")
	for _, want := range []string{
		rotated + ":2: malformed line skipped: invalid character",
		file + ":2: malformed line skipped: a JSON object without an audit record's type and time",
		file + ":5: malformed line skipped: unexpected end of JSON input (the last line, without a newline: still being written?)",
	} {
		if !strings.Contains(errOut.String(), want) {
			t.Errorf("stderr lacks %q:\n%s", want, errOut.String())
		}
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 7 || strings.Join(strings.Fields(lines[0]), " ") != "TIME TYPE ACTION USER GUARD OBJECT DETAIL" {
		t.Fatalf("table:\n%s", out.String())
	}
	if f := strings.Fields(lines[4]); strings.Join(f, " ") != "2026-12-04T11:10:00Z decision deny alice shop Deployment shop/web managed-by-git: owned by Git" {
		t.Errorf("row %q", lines[4])
	}

	for _, tc := range []struct {
		files []string
		q     queryFlags
		want  string
	}{
		{[]string{file}, queryFlags{output: "yaml"}, `--output "yaml"`},
		{[]string{file}, queryFlags{output: "table", since: "yesterday"}, `--since "yesterday": want a duration`},
		{[]string{file}, queryFlags{output: "table", until: "-1h"}, `--until "-1h": a duration back from now must not be negative`},
		{[]string{filepath.Join(dir, "missing.log")}, queryFlags{output: "table"}, "missing.log: no such file"},
	} {
		err := runAuditQuery(&out, &errOut, tc.files, tc.q, queryNow)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v %+v: error %v, want %q", tc.files, tc.q, err, tc.want)
		}
	}
	t.Setenv("DRIFTGUARD_AUDIT_FILE", "")
	if err := runAuditQuery(&out, &errOut, nil, queryFlags{output: "table"}, queryNow); err == nil || !strings.Contains(err.Error(), "no audit file") {
		t.Errorf("no file: %v", err)
	}
	// Through the command, the file from the environment.
	t.Setenv("DRIFTGUARD_AUDIT_FILE", file)
	got, err := runCLI(t, "audit", "query", "--since", "2026-11-01T00:00:00Z", "--user", "alice", "--guard", "shop", "-o", "json")
	if err != nil || strings.Count(got, `"type":"decision"`) != 2 {
		t.Errorf("audit query: %v\n%s", err, got)
	}
}

// TestAuditQueryRotatedBySink: the file sink really rotates the file (at
// its 1 MB minimum); query reads every record back, in order, from the
// rotated files and the current one.
func TestAuditQueryRotatedBySink(t *testing.T) {
	file := filepath.Join(t.TempDir(), "audit.log")
	sink := audit.NewFileSink(file, 1, 0)
	const n = 6000
	start := time.Now().UTC().Add(-time.Hour)
	batch := make([]audit.Record, 0, 500)
	for i := range n {
		batch = append(batch, audit.Record{Time: start.Add(time.Duration(i) * time.Millisecond), Type: audit.Drift, Guard: "shop",
			Object: audit.Object{Version: "v1", Kind: "ConfigMap", Namespace: "shop", Name: fmt.Sprintf("cm-%05d", i)},
			Fields: []audit.Field{{Path: "/data/" + strings.Repeat("k", 100), Desired: "a", Live: "b"}}})
		if len(batch) == cap(batch) {
			if err := sink.Write(context.Background(), batch); err != nil {
				t.Fatal(err)
			}
			batch = batch[:0]
		}
	}
	if err := sink.Close(); err != nil {
		t.Fatal(err)
	}
	files, err := auditFiles(file, time.Time{})
	if err != nil || len(files) < 2 {
		t.Fatalf("the sink did not rotate: %v %v", files, err)
	}
	var out, errOut bytes.Buffer
	if err := runAuditQuery(&out, &errOut, []string{file}, queryFlags{output: "json", since: "2h"}, time.Now()); err != nil {
		t.Fatal(err)
	}
	i := 0
	for line := range strings.Lines(out.String()) {
		var r audit.Record
		if err := json.Unmarshal([]byte(line), &r); err != nil || r.Object.Name != fmt.Sprintf("cm-%05d", i) {
			t.Fatalf("record %d: %v %s", i, err, line)
		}
		i++
	}
	if i != n || errOut.Len() != 0 {
		t.Errorf("%d records back of %d, stderr %q", i, n, errOut.String())
	}
}

package audit

import (
	"bufio"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/go-logr/logr"
)

// readLines decodes every JSON line of every file in dir, oldest file first
// (rotated files carry a timestamp and sort before the current one).
func readLines(t *testing.T, dir, current string) (files []string, recs []Record) {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if e.Name() != current {
			files = append(files, e.Name())
		}
	}
	sort.Strings(files)
	files = append(files, current)
	for _, name := range files {
		f, err := os.Open(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(f)
		sc.Buffer(make([]byte, 0, 64*1024), 1024*1024)
		for sc.Scan() {
			var r Record
			if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
				t.Fatalf("%s: line is not a record: %v", name, err)
			}
			recs = append(recs, r)
		}
		if err := sc.Err(); err != nil {
			t.Fatal(err)
		}
		f.Close()
	}
	return files, recs
}

func TestFileSink(t *testing.T) {
	big := strings.Repeat("x", 10*1024)
	tests := []struct {
		name      string
		records   int
		reason    string
		wantFiles int
	}{
		{"small: one file", 5, "r", 1},
		// 130 records of about 10 KiB pass the 1 MB minimum once.
		{"rotates past max size", 130, big, 2},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "sub", "audit.log") // directory made on demand
			sink := NewFileSink(path, 1, 3)
			l := newTestLogger(logr.Discard(), 16, sink)
			startLogger(t, l)
			for i := range tc.records {
				r := rec(i)
				r.Reason = tc.reason
				l.Log(context.Background(), r)
			}
			if err := flush(t, l); err != nil {
				t.Fatal(err)
			}
			files, recs := readLines(t, filepath.Join(dir, "sub"), "audit.log")
			if len(files) != tc.wantFiles {
				t.Errorf("files %v, want %d", files, tc.wantFiles)
			}
			if len(recs) != tc.records {
				t.Fatalf("read %d records, want %d", len(recs), tc.records)
			}
			for i, r := range recs {
				if r.Object.Name != rec(i).Object.Name || r.Reason != tc.reason {
					t.Fatalf("record %d is %s, want %s", i, r.Object.Name, rec(i).Object.Name)
				}
			}
			info, err := os.Stat(path)
			if err != nil {
				t.Fatal(err)
			}
			if perm := info.Mode().Perm(); perm != 0o600 {
				t.Errorf("file mode %v, want 0600", perm)
			}
		})
	}
}

func TestFileSinkAppendsAcrossRestarts(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.log")
	for i := range 2 {
		s := NewFileSink(path, 10, 1)
		if err := s.Write(context.Background(), []Record{rec(i)}); err != nil {
			t.Fatal(err)
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
	}
	_, recs := readLines(t, filepath.Dir(path), "audit.log")
	if len(recs) != 2 {
		t.Errorf("got %d records, want 2", len(recs))
	}
}

func TestOpenFileSink(t *testing.T) {
	dir := t.TempDir()
	notDir := filepath.Join(dir, "plain")
	if err := os.WriteFile(notDir, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		path    string
		wantErr string
	}{
		{"writable", filepath.Join(dir, "a", "audit.log"), ""},
		{"parent is a file", filepath.Join(notDir, "audit.log"), "open audit file"},
		{"empty", "", "empty path"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s, err := OpenFileSink(tc.path, 1, 1)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			if _, err := os.Stat(tc.path); err != nil {
				t.Errorf("file not created: %v", err)
			}
		})
	}
}

func TestFileSinkWriteErrorIsReported(t *testing.T) {
	dir := t.TempDir()
	notDir := filepath.Join(dir, "plain")
	if err := os.WriteFile(notDir, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	s := NewFileSink(filepath.Join(notDir, "audit.log"), 1, 1)
	err := s.Write(context.Background(), []Record{rec(1), rec(2)})
	if err == nil {
		t.Fatal("Write to an impossible path succeeded")
	}
	if n := failedCount(err, 2); n != 2 {
		t.Errorf("failed count %d, want 2", n)
	}
	if isPermanent(err) {
		t.Error("an I/O error should be retried")
	}
}

// TestOpenFileSinkFullDisk: a full disk (/dev/full) does not stop start-up;
// the writes fail and are reported, with retries, as for a disk that fills
// up later.
func TestOpenFileSinkFullDisk(t *testing.T) {
	if _, err := os.Stat("/dev/full"); err != nil {
		t.Skipf("no /dev/full: %v", err)
	}
	path := filepath.Join(t.TempDir(), "audit.log")
	if err := os.Symlink("/dev/full", path); err != nil {
		t.Fatal(err)
	}
	s, err := OpenFileSink(path, 1, 1)
	if err != nil {
		t.Fatalf("OpenFileSink on a full disk: %v", err)
	}
	defer s.Close()
	err = s.Write(context.Background(), []Record{rec(1)})
	if err == nil || !strings.Contains(err.Error(), "no space left on device") || isPermanent(err) {
		t.Fatalf("Write to a full disk = %v, want a retryable ENOSPC", err)
	}
}

package harness

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/driftguard/driftguard/audit"
	"github.com/driftguard/driftguard/test/wait"
)

// Records is an io.Writer that keeps the audit JSON lines the guard writes.
type Records struct {
	mu      sync.Mutex
	partial []byte
	records []audit.Record
	bad     []string
}

// Write implements io.Writer.
func (r *Records) Write(p []byte) (int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.partial = append(r.partial, p...)
	for {
		i := bytes.IndexByte(r.partial, '\n')
		if i < 0 {
			break
		}
		line := r.partial[:i]
		var rec audit.Record
		if err := json.Unmarshal(line, &rec); err != nil {
			r.bad = append(r.bad, string(line))
		} else {
			r.records = append(r.records, rec)
		}
		r.partial = r.partial[i+1:]
	}
	return len(p), nil
}

// All returns the records so far.
func (r *Records) All() []audit.Record {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]audit.Record(nil), r.records...)
}

// Find returns the records for which match is true.
func (r *Records) Find(match func(audit.Record) bool) []audit.Record {
	var out []audit.Record
	for _, rec := range r.All() {
		if match(rec) {
			out = append(out, rec)
		}
	}
	return out
}

// Wait waits for a record for which match is true and returns it.
func (r *Records) Wait(t testing.TB, timeout time.Duration, what string, match func(audit.Record) bool) audit.Record {
	t.Helper()
	var found audit.Record
	wait.Eventually(t, timeout, "audit record "+what, func() error {
		if recs := r.Find(match); len(recs) > 0 {
			found = recs[0]
			return nil
		}
		return fmt.Errorf("none among %d records%s", len(r.All()), r.summary(10))
	})
	return found
}

// summary lists the last n records in brief (type, action, user, object,
// reason), for a failure to show what the guard recorded instead.
func (r *Records) summary(n int) string {
	all := r.All()
	var b strings.Builder
	for _, rec := range all[max(0, len(all)-n):] {
		fmt.Fprintf(&b, "\n  %s %s by %q: %s %s/%s: %s", rec.Time.Format("15:04:05.000"), rec.Type, rec.User, rec.Object.Kind, rec.Object.Namespace, rec.Object.Name, rec.Action)
		if rec.Reason != "" {
			fmt.Fprintf(&b, " (%s)", rec.Reason)
		}
	}
	return b.String()
}

// Malformed returns lines that were not JSON records.
func (r *Records) Malformed() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.bad...)
}

package harness

import (
	"os"
	"testing"
)

// TestProcMemOfSelf reads this process's own /proc status: the parts add up to
// about the resident set, which is at most its peak.
func TestProcMemOfSelf(t *testing.T) {
	rss, hwm := ProcMem(os.Getpid())
	anon, file := ProcRSSParts(os.Getpid())
	if rss <= 0 || hwm < rss || anon <= 0 || file <= 0 || anon+file > rss+1 {
		t.Fatalf("rss %v hwm %v anon %v file %v", rss, hwm, anon, file)
	}
}

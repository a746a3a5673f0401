package audit

import (
	"fmt"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
)

// TestDeniedUsersCapped: the first maxDeniedUsers users denied get a
// series each; later ones share OtherUsers, so identities anyone can create
// cannot grow the metrics without bound. Allowed decisions count by action
// and rule only.
func TestDeniedUsersCapped(t *testing.T) {
	// Other tests of the package may have denied users already.
	deniedUsersMu.Lock()
	deniedUsers = map[string]bool{}
	deniedUsersMu.Unlock()
	deniedTotal.Reset()
	denyBefore := testutil.ToFloat64(decisionsTotal.WithLabelValues("deny", "managed-by-git"))
	allowBefore := testutil.ToFloat64(decisionsTotal.WithLabelValues("allow", "break-glass"))
	for i := range maxDeniedUsers + 50 {
		countDecision(&Record{Type: Decision, Action: "deny", Rule: "managed-by-git", User: fmt.Sprintf("system:serviceaccount:ns:sa-%d", i)})
	}
	countDecision(&Record{Type: Decision, Action: "deny", Rule: "managed-by-git", User: "system:serviceaccount:ns:sa-0"})
	countDecision(&Record{Type: Decision, Action: "allow", Rule: "break-glass", User: "sam"})
	countDecision(&Record{Type: Drift, Action: "deny", User: "not-a-decision"})

	if n := testutil.CollectAndCount(deniedTotal); n != maxDeniedUsers+1 {
		t.Fatalf("%d user series, want %d and %q", n, maxDeniedUsers, OtherUsers)
	}
	if v := testutil.ToFloat64(deniedTotal.WithLabelValues(OtherUsers)); v != 50 {
		t.Fatalf("%q: %v denials, want 50", OtherUsers, v)
	}
	if v := testutil.ToFloat64(deniedTotal.WithLabelValues("system:serviceaccount:ns:sa-0")); v != 2 {
		t.Fatalf("a user with a series keeps it: %v denials, want 2", v)
	}
	if v := testutil.ToFloat64(decisionsTotal.WithLabelValues("deny", "managed-by-git")) - denyBefore; v != maxDeniedUsers+51 {
		t.Fatalf("deny decisions %v", v)
	}
	if v := testutil.ToFloat64(decisionsTotal.WithLabelValues("allow", "break-glass")) - allowBefore; v != 1 {
		t.Fatalf("allow decisions %v", v)
	}
}

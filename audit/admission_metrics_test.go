package audit

import (
	"fmt"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
)

// reset forgets the values handed out, for a test that counts series.
func (c *cappedLabel) reset() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.seen = map[string]bool{}
}

// TestDeniedUsersCapped: the first maxLabelValues users denied get a
// series each; later ones share Other, so identities anyone can create
// cannot grow the metrics without bound. Allowed decisions count by action
// and rule only.
func TestDeniedUsersCapped(t *testing.T) {
	// Other tests of the package may have denied users already.
	deniedUsers.reset()
	deniedTotal.Reset()
	denyBefore := testutil.ToFloat64(decisionsTotal.WithLabelValues("deny", "managed-by-git"))
	allowBefore := testutil.ToFloat64(decisionsTotal.WithLabelValues("allow", "break-glass"))
	for i := range maxLabelValues + 50 {
		countDecision(&Record{Type: Decision, Action: "deny", Rule: "managed-by-git", User: fmt.Sprintf("system:serviceaccount:ns:sa-%d", i)})
	}
	countDecision(&Record{Type: Decision, Action: "deny", Rule: "managed-by-git", User: "system:serviceaccount:ns:sa-0"})
	countDecision(&Record{Type: Decision, Action: "allow", Rule: "break-glass", User: "sam"})
	countDecision(&Record{Type: Drift, Action: "deny", User: "not-a-decision"})

	if n := testutil.CollectAndCount(deniedTotal); n != maxLabelValues+1 {
		t.Fatalf("%d user series, want %d and %q", n, maxLabelValues, Other)
	}
	if v := testutil.ToFloat64(deniedTotal.WithLabelValues(Other)); v != 50 {
		t.Fatalf("%q: %v denials, want 50", Other, v)
	}
	if v := testutil.ToFloat64(deniedTotal.WithLabelValues("system:serviceaccount:ns:sa-0")); v != 2 {
		t.Fatalf("a user with a series keeps it: %v denials, want 2", v)
	}
	if v := testutil.ToFloat64(decisionsTotal.WithLabelValues("deny", "managed-by-git")) - denyBefore; v != maxLabelValues+51 {
		t.Fatalf("deny decisions %v", v)
	}
	if v := testutil.ToFloat64(decisionsTotal.WithLabelValues("allow", "break-glass")) - allowBefore; v != 1 {
		t.Fatalf("allow decisions %v", v)
	}
}

// TestDecisionRulesCapped: a custom policy that answers a rule of its
// own per request (made of the user, the object) gets a series for each
// of its first maxLabelValues rules; later rules, and rules longer than
// maxRuleLength, share Other.
func TestDecisionRulesCapped(t *testing.T) {
	decisionRules.reset()
	decisionsTotal.Reset()
	long := strings.Repeat("r", maxRuleLength+1)
	for _, tt := range []struct {
		name  string
		rule  string
		label string
	}{
		{"a rule of the first ones", "rule-0", "rule-0"},
		{"the same rule again", "rule-0", "rule-0"},
		{"an overlong rule", long, Other},
		{"no rule", "", ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			before := testutil.ToFloat64(decisionsTotal.WithLabelValues("warn", tt.label))
			countDecision(&Record{Type: Decision, Action: "warn", Rule: tt.rule, User: "sam"})
			if v := testutil.ToFloat64(decisionsTotal.WithLabelValues("warn", tt.label)) - before; v != 1 {
				t.Fatalf("rule %.20q counted %v times under %q, want once", tt.rule, v, tt.label)
			}
		})
	}
	for i := range maxLabelValues + 50 {
		countDecision(&Record{Type: Decision, Action: "deny", Rule: fmt.Sprintf("rule-%d", i), User: "sam"})
	}
	// The rules "" and rule-0 … rule-98 keep series of their own; the rest
	// share Other: warn has rule-0, Other and "", deny rule-0 … rule-98 and
	// Other.
	if n, want := testutil.CollectAndCount(decisionsTotal), 3+maxLabelValues; n != want {
		t.Fatalf("%d series, want %d", n, want)
	}
	if v := testutil.ToFloat64(decisionsTotal.WithLabelValues("deny", Other)); v != 51 {
		t.Fatalf("%q: %v decisions, want 51", Other, v)
	}
	if v := testutil.ToFloat64(decisionsTotal.WithLabelValues("deny", "rule-0")); v != 1 {
		t.Fatalf("a rule with a series keeps it: %v decisions, want 1", v)
	}
}

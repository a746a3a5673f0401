package faults

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/driftguard/driftguard/audit"
	"github.com/driftguard/driftguard/decision"
	"github.com/driftguard/driftguard/test/harness"
	"github.com/driftguard/driftguard/test/wait"
)

// slowPolicy compiles, and loops over nine million pairs before it decides.
const slowPolicy = `package driftguard

decision := {"action": "allow", "reason": "slow"} if {
	count([x | some i in numbers.range(1, 3000); some j in numbers.range(1, 3000); x := i * j; x < 0]) == 0
}
`

// TestPolicyBrokenThenSlow: the guard serves a policy from --policy-dir with
// --failure-policy Fail. A policy file that does not compile is refused and
// the last good policy keeps deciding; a policy that compiles but runs past
// --policy-timeout makes every decision a policy error, which the failure
// policy decides (deny), and which is recorded; the default policy, put back,
// decides again. Every one of alice's changes gets exactly one decision
// record.
func TestPolicyBrokenThenSlow(t *testing.T) {
	const ns, name, n = "fault-policy", "fault-policy", 3
	dir := t.TempDir()
	writeDefaultPolicy(t, dir)
	namespace(t, ns)
	_, rev := newRepo(t, name, cmFiles(ns, n, n, gitValues))
	g := startGuard(t, "--policy-dir", dir, "--failure-policy", "Fail", "--policy-timeout", "300ms")
	createGuard(t, name)
	waitApplied(t, g, name, rev, n, 60*time.Second)
	g.waitWebhook(ns, cmName(0))

	var seq atomic.Int64
	var tokens []string
	// try patches as alice until the denial message holds want, and returns it.
	try := func(what, want string) string {
		t.Helper()
		var msg string
		wait.Eventually(t, 60*time.Second, what, func() error {
			g.alive()
			token := fmt.Sprintf("alice-%03d", seq.Add(1))
			tokens = append(tokens, token)
			err := patchValue(alice, ns, cmName(1), token)
			if !isDenied(err) {
				return fmt.Errorf("patch not denied: %v", err)
			}
			if msg = err.Error(); !strings.Contains(msg, want) {
				return fmt.Errorf("denied without %q: %s", want, msg)
			}
			return nil
		})
		return tokens[len(tokens)-1]
	}
	decisionOf := func(token string) audit.Record {
		t.Helper()
		var rec audit.Record
		wait.Eventually(t, 10*time.Second, "decision record of "+token, func() error {
			recs := byToken(g.records(), audit.Decision)[token]
			if len(recs) == 0 {
				return fmt.Errorf("none")
			}
			rec = recs[0]
			return nil
		})
		return rec
	}

	good := decisionOf(try("denied by the policy", `"managed-by-git"`))
	if good.Rule != decision.RuleManagedByGit || good.PolicyRevision == "" {
		t.Fatalf("decision of the good policy: %+v", good)
	}

	// 1. A file that does not compile: refused, the last good policy serves.
	if err := os.WriteFile(filepath.Join(dir, "broken.rego"), []byte("package driftguard\n\ndecision := {\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	wait.Eventually(t, 30*time.Second, "broken policy refused in the log", func() error {
		if g.proc().LogContains("policy not loaded; keeping the last good policy") && g.proc().LogContains("broken.rego:") {
			return nil
		}
		return fmt.Errorf("no log line about broken.rego")
	})
	kept := decisionOf(try("still denied by the last good policy", `"managed-by-git"`))
	if kept.Rule != decision.RuleManagedByGit || kept.PolicyRevision != good.PolicyRevision {
		t.Fatalf("after a broken policy: %+v, want rule managed-by-git of revision %s", kept, good.PolicyRevision)
	}

	// 2. A policy that compiles and runs out of time: the failure policy.
	for _, f := range []string{"broken.rego", "decision.rego"} {
		if err := os.Remove(filepath.Join(dir, f)); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "slow.rego"), []byte(slowPolicy), 0o644); err != nil {
		t.Fatal(err)
	}
	slow := decisionOf(try("denied by the failure policy", "timed out"))
	if slow.Action != "deny" || slow.Rule != decision.RuleFailurePolicy || !strings.Contains(slow.Error, "policy evaluation timed out after 300ms") ||
		slow.PolicyRevision == good.PolicyRevision {
		t.Fatalf("decision under a timing-out policy: %+v", slow)
	}

	// 3. The default policy again.
	if err := os.Remove(filepath.Join(dir, "slow.rego")); err != nil {
		t.Fatal(err)
	}
	writeDefaultPolicy(t, dir)
	back := decisionOf(try("denied by the policy again", `"managed-by-git"`))
	if back.Rule != decision.RuleManagedByGit {
		t.Fatalf("after restoring the policy: %+v", back)
	}

	// Every change alice tried has exactly one decision record, in both sinks.
	recs := g.records()
	decisions := byToken(recs, audit.Decision)
	for _, tok := range tokens {
		if got := len(decisions[tok]); got != 1 {
			t.Errorf("%s: %d decision records, want 1", tok, got)
		}
	}
	waitSameRecords(t, g, 0)
	if err := sameAsGit(ns, wantValues(n, gitValues)); err != nil {
		t.Error(err)
	}
}

func writeDefaultPolicy(t *testing.T, dir string) {
	t.Helper()
	if err := harness.WriteDefaultPolicy(dir, nil); err != nil {
		t.Fatal(err)
	}
}

package faults

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/driftguard/driftguard/audit"
	"github.com/driftguard/driftguard/test/wait"
)

// floodHeapSlack is how far above its baseline the guard's heap may stay
// after a flood, once collected: generous, since this checks that memory
// comes back, not how fast.
const floodHeapSlack = 50 // MiB

// TestManualEditFlood: 1,000 manual edits by alice in 10 s of 500 managed
// ConfigMaps: 500 with the webhook registered (each denied), then 500 with
// the webhook configurations deleted (each admitted, then reverted). Every
// edit is denied or reverted and recorded, the cluster ends as in Git, and
// the guard's heap returns to its baseline.
func TestManualEditFlood(t *testing.T) {
	const ns, name, n = "fault-flood", "fault-flood", 500
	namespace(t, ns)
	_, rev := newRepo(t, name, cmFiles(ns, n, 25, gitValues))
	// Without self-protection: phase 2 deletes the webhook configurations.
	g := startGuard(t, "--self-protect=false")
	createGuard(t, name)
	waitApplied(t, g, name, rev, n, 90*time.Second)
	g.waitWebhook(ns, cmName(0))
	base, err := g.proc().HeapAfterGC()
	if err != nil {
		t.Fatal(err)
	}

	// Phase 1: the webhook decides.
	denyTargets := make([]int, n)
	for i := range denyTargets {
		denyTargets[i] = rand.IntN(n)
	}
	denied := flood(alice, ns, "deny", denyTargets, 100)

	// Phase 2: no webhook; the informer reverts.
	ctx := context.Background()
	if err := kube.AdmissionregistrationV1().ValidatingWebhookConfigurations().Delete(ctx, webhookName, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	_ = kube.AdmissionregistrationV1().MutatingWebhookConfigurations().Delete(ctx, webhookName, metav1.DeleteOptions{})
	wait.Eventually(t, 15*time.Second, "webhook off", func() error {
		if err := patchValue(alice, ns, cmName(0), fmt.Sprintf("probe-off-%d", time.Now().UnixNano())); err != nil {
			return err
		}
		return nil
	})
	reverted := flood(alice, ns, "revert", rand.Perm(n), 100)
	peak, _ := g.proc().Mem()

	edits := append(denied, reverted...)
	wait.Eventually(t, 60*time.Second, "every ConfigMap back to Git", func() error {
		g.alive()
		return sameAsGit(ns, wantValues(n, gitValues))
	})
	var nDenied, nReverted int
	wait.Eventually(t, 60*time.Second, "every edit recorded", func() error {
		recs := g.records()
		decisions, drifts, reverts := byToken(recs, audit.Decision), byToken(recs, audit.Drift), byToken(recs, audit.Revert)
		nDenied, nReverted = 0, 0
		for _, e := range edits {
			switch {
			case isDenied(e.err):
				if !hasAction(decisions[e.token], "deny") {
					return fmt.Errorf("edit %s was denied without a deny record", e.token)
				}
				nDenied++
			case e.err != nil:
				return fmt.Errorf("edit %s: %v", e.token, e.err)
			default:
				if len(drifts[e.token]) == 0 || len(reverts[e.token]) == 0 {
					return fmt.Errorf("edit %s was admitted: drift records %d, revert records %d", e.token, len(drifts[e.token]), len(reverts[e.token]))
				}
				nReverted++
			}
		}
		return nil
	})
	t.Logf("%d edits denied and recorded, %d reverted and recorded", nDenied, nReverted)
	if nDenied < len(denied)/2 || nReverted != len(reverted) {
		t.Errorf("the phases did not test what they say: %d of %d denied with the webhook, %d of %d reverted without", nDenied, len(denied), nReverted, len(reverted))
	}
	waitSameRecords(t, g, 0)

	var after float64
	wait.Eventually(t, 60*time.Second, "heap back to its baseline", func() error {
		g.alive()
		if after, err = g.proc().HeapAfterGC(); err != nil {
			return err
		}
		if after > base+floodHeapSlack {
			return fmt.Errorf("heap %.1f MiB after GC, baseline %.1f MiB", after, base)
		}
		return nil
	})
	t.Logf("guard heap after GC: %.1f MiB before the flood, %.1f MiB after (RSS peak during it %.1f MiB)", base, after, peak)
}

func hasAction(recs []audit.Record, action string) bool {
	for _, r := range recs {
		if r.Action == action {
			return true
		}
	}
	return false
}

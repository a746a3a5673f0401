package faults

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/driftguard/driftguard/api/v1alpha1"
	"github.com/driftguard/driftguard/audit"
	"github.com/driftguard/driftguard/test/wait"
)

// TestGitServerDownBeyondRetryLimit: the Git server goes down (connections
// refused) for longer than the Guard's retries last (limit 2, 1 s then 2 s).
// Meanwhile the last good revision stays applied and self-heal goes on;
// when the server is back the Guard recovers without a push, and then
// follows Git again.
func TestGitServerDownBeyondRetryLimit(t *testing.T) {
	const ns, name, n = "fault-git", "fault-git", 20
	namespace(t, ns)
	repo, rev := newRepo(t, name, cmFiles(ns, n, 10, gitValues))
	g := startGuard(t, "--webhook-register=false")
	createGuard(t, name, func(s *v1alpha1.GuardSpec) {
		s.Interval = metav1.Duration{Duration: 2 * time.Second}
		s.Retry = &v1alpha1.RetryPolicy{Limit: 2, Backoff: &v1alpha1.Backoff{
			Duration: &metav1.Duration{Duration: time.Second}, Factor: 2, MaxDuration: &metav1.Duration{Duration: 2 * time.Second}}}
	})
	waitApplied(t, g, name, rev, n, 60*time.Second)

	if err := git.Pause(); err != nil {
		t.Fatal(err)
	}
	paused := true
	t.Cleanup(func() {
		if paused {
			_ = git.Resume()
		}
	})
	wait.Eventually(t, 30*time.Second, "Guard reports the fetch failure", func() error {
		got, err := getGuard(name)
		if err != nil {
			return err
		}
		ready := meta.FindStatusCondition(got.Status.Conditions, v1alpha1.ConditionReady)
		if ready == nil || ready.Status != metav1.ConditionFalse || !strings.Contains(ready.Message, "connection refused") {
			return fmt.Errorf("Ready condition %+v", ready)
		}
		if got.Status.LastAppliedRevision != rev {
			return fmt.Errorf("last applied revision %q, want %q", got.Status.LastAppliedRevision, rev)
		}
		return nil
	})
	// Self-heal from the last good revision while Git is away.
	if err := patchValue(alice, ns, cmName(3), "edit-while-git-down"); err != nil {
		t.Fatal(err)
	}
	waitValue(t, g, ns, cmName(3), gitValue)
	// The outage outlasts the retries (1 s + 2 s) several times over.
	time.Sleep(8 * time.Second)
	g.alive()
	if err := sameAsGit(ns, wantValues(n, gitValues)); err != nil {
		t.Fatalf("during the outage: %v", err)
	}

	if err := git.Resume(); err != nil {
		t.Fatal(err)
	}
	paused = false
	// No push, no spec change: the Guard finds its source again by itself.
	waitApplied(t, g, name, rev, n, 90*time.Second)
	rev2 := commit(t, repo, "after the outage", cmFiles(ns, n, 10, func(i int) string {
		if i == 0 {
			return "after-outage"
		}
		return gitValue
	}))
	waitApplied(t, g, name, rev2, n, 60*time.Second)
	waitValue(t, g, ns, cmName(0), "after-outage")

	recs := g.records()
	if len(byToken(recs, audit.Drift)["edit-while-git-down"]) == 0 || len(byToken(recs, audit.Revert)["edit-while-git-down"]) == 0 {
		t.Errorf("no drift and revert record for the edit made while Git was down")
	}
	if _, bad := g.fileRecords(); len(bad) > 0 {
		t.Errorf("%d malformed lines in the audit file", len(bad))
	}
	waitSameRecords(t, g, 0)
}

// waitValue waits until ConfigMap ns/name has data.value want.
func waitValue(t *testing.T, g *guardProc, ns, name, want string) {
	t.Helper()
	wait.Eventually(t, 30*time.Second, fmt.Sprintf("%s/%s has value %q", ns, name, want), func() error {
		g.alive()
		got, err := configMapValues(ns)
		if err != nil {
			return err
		}
		if got[name] != want {
			return fmt.Errorf("value %q", got[name])
		}
		return nil
	})
}

package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/driftguard/driftguard/api/v1alpha1"
	"github.com/driftguard/driftguard/test/wait"
)

// waitCondition waits until the Guard's condition has the status and a
// reason and message containing the given texts; it returns the Guard.
func waitCondition(t *testing.T, guard, typ string, status metav1.ConditionStatus, reason, msgPart string) *v1alpha1.Guard {
	t.Helper()
	var g *v1alpha1.Guard
	wait.Eventually(t, 60*time.Second, fmt.Sprintf("guard %s %s=%s %s %q", guard, typ, status, reason, msgPart), func() error {
		g = h.Guard(t, guard)
		c := meta.FindStatusCondition(g.Status.Conditions, typ)
		if c == nil || c.Status != status || (reason != "" && c.Reason != reason) || !strings.Contains(c.Message, msgPart) {
			return fmt.Errorf("conditions %+v", g.Status.Conditions)
		}
		return nil
	})
	return g
}

// requestSync does what driftguard sync does: a new value of the annotation.
func requestSync(t *testing.T, guard string) string {
	t.Helper()
	value := time.Now().UTC().Format(time.RFC3339Nano)
	patch := fmt.Sprintf(`{"metadata":{"annotations":{%q:%q}}}`, v1alpha1.SyncRequestedAnnotation, value)
	g := &v1alpha1.Guard{ObjectMeta: metav1.ObjectMeta{Name: guard}}
	if err := h.Admin.Patch(context.Background(), g, client.RawPatch("application/merge-patch+json", []byte(patch))); err != nil {
		t.Fatal(err)
	}
	return value
}

// TestManualSync: nothing is applied until a sync is asked for; a new
// revision waits in status.pendingRevision while drift is still reverted to
// the synced revision.
func TestManualSync(t *testing.T) {
	t.Parallel()
	const ns = "manual-sync"
	repo := h.NewGuard(t, "manual-sync", true, map[string]string{"ns.yaml": namespace(ns), "cm.yaml": configMap(ns, "cm", "one")},
		func(s *v1alpha1.GuardSpec) { s.Sync = v1alpha1.SyncManual; s.Enforcement = v1alpha1.EnforcementDryRun })
	g := waitCondition(t, repo.Guard, v1alpha1.ConditionReady, metav1.ConditionFalse, v1alpha1.ReasonManualSyncRequired, "driftguard sync manual-sync")
	if g.Status.PendingRevision != repo.Initial {
		t.Fatalf("pendingRevision = %q, want %s", g.Status.PendingRevision, repo.Initial)
	}
	if _, err := getConfigMap(t, ns, "cm"); err == nil {
		t.Fatal("a manual Guard applied before a sync was asked for")
	}

	request := requestSync(t, repo.Guard)
	g = h.WaitApplied(t, repo.Guard, repo.Initial)
	if g.Status.LastHandledSyncRequest != request || g.Status.PendingRevision != "" {
		t.Fatalf("after the sync: lastHandledSyncRequest %q pendingRevision %q", g.Status.LastHandledSyncRequest, g.Status.PendingRevision)
	}
	waitValue(t, ns, "cm", "one")

	second := repo.Change(t, "two", map[string]string{"cm.yaml": configMap(ns, "cm", "two")})
	g = waitCondition(t, repo.Guard, v1alpha1.ConditionInSync, metav1.ConditionFalse, v1alpha1.ReasonManualSyncRequired, second[:7])
	if g.Status.PendingRevision != second || g.Status.LastAppliedRevision != repo.Initial {
		t.Fatalf("pending %q applied %q, want %s pending and %s applied", g.Status.PendingRevision, g.Status.LastAppliedRevision, second, repo.Initial)
	}
	// Self-heal goes on, to the revision in force.
	if out, err := h.Kubectl(t, append([]string{"patch", "configmap", "cm", "-n", ns}, patchValue("by alice")...)...); err != nil {
		t.Fatalf("dryrun enforcement denied: %s", out)
	}
	waitValue(t, ns, "cm", "one")

	requestSync(t, repo.Guard)
	h.WaitApplied(t, repo.Guard, second)
	waitValue(t, ns, "cm", "two")
}

// TestSyncWindow: a deny window holds a new revision; a manual sync passes a
// window with manualSync.
func TestSyncWindow(t *testing.T) {
	t.Parallel()
	const ns = "sync-window"
	repo := h.NewGuard(t, "sync-window", true, map[string]string{"ns.yaml": namespace(ns), "cm.yaml": configMap(ns, "cm", "one")})
	h.WaitApplied(t, repo.Guard, repo.Initial)

	updateGuard(t, repo.Guard, func(s *v1alpha1.GuardSpec) {
		s.SyncWindows = []v1alpha1.SyncWindow{{Kind: "deny", Schedule: "* * * * *", Duration: metav1.Duration{Duration: time.Hour}, TimeZone: "Europe/Berlin", ManualSync: true}}
	})
	second := repo.Change(t, "two", map[string]string{"cm.yaml": configMap(ns, "cm", "two")})
	got := waitCondition(t, repo.Guard, v1alpha1.ConditionInSync, metav1.ConditionFalse, v1alpha1.ReasonSyncWindowClosed, `deny window "* * * * *" (1h0m0s, Europe/Berlin) is open until`)
	if got.Status.PendingRevision != second {
		t.Fatalf("pendingRevision = %q, want %s", got.Status.PendingRevision, second)
	}
	if !meta.IsStatusConditionTrue(got.Status.Conditions, v1alpha1.ConditionReady) {
		t.Fatalf("the revision in force is applied, the Guard stays Ready: %+v", got.Status.Conditions)
	}
	waitValue(t, ns, "cm", "one")

	requestSync(t, repo.Guard)
	h.WaitApplied(t, repo.Guard, second)
	waitValue(t, ns, "cm", "two")
}

// TestSuspend: a suspended Guard applies nothing new and reverts nothing.
func TestSuspend(t *testing.T) {
	t.Parallel()
	const ns = "suspend"
	repo := h.NewGuard(t, "suspend", true, map[string]string{"ns.yaml": namespace(ns), "cm.yaml": configMap(ns, "cm", "one")},
		func(s *v1alpha1.GuardSpec) { s.Enforcement = v1alpha1.EnforcementDryRun })
	h.WaitApplied(t, repo.Guard, repo.Initial)
	setSuspend := func(on bool) {
		patch := fmt.Sprintf(`{"spec":{"suspend":%t}}`, on)
		if err := h.Admin.Patch(context.Background(), &v1alpha1.Guard{ObjectMeta: metav1.ObjectMeta{Name: repo.Guard}}, client.RawPatch("application/merge-patch+json", []byte(patch))); err != nil {
			t.Fatal(err)
		}
	}
	setSuspend(true)
	wait.Eventually(t, 30*time.Second, "suspension observed", func() error {
		if g := h.Guard(t, repo.Guard); g.Status.ObservedGeneration != g.Generation {
			return fmt.Errorf("generation %d observed %d", g.Generation, g.Status.ObservedGeneration)
		}
		return nil
	})
	second := repo.Change(t, "two", map[string]string{"cm.yaml": configMap(ns, "cm", "two")})
	if out, err := h.Kubectl(t, append([]string{"patch", "configmap", "cm", "-n", ns}, patchValue("by alice")...)...); err != nil {
		t.Fatalf("patch: %s", out)
	}
	// Several intervals (2 s) pass: neither the new revision nor a revert.
	deadline := time.Now().Add(6 * time.Second)
	for time.Now().Before(deadline) {
		cm, err := getConfigMap(t, ns, "cm")
		if err != nil {
			t.Fatal(err)
		}
		if cm.Data["value"] != "by alice" {
			t.Fatalf("a suspended Guard changed the object: value %q", cm.Data["value"])
		}
		time.Sleep(200 * time.Millisecond)
	}
	setSuspend(false)
	h.WaitApplied(t, repo.Guard, second)
	waitValue(t, ns, "cm", "two")
}

// TestEmptyRevisionPrunesNothingUnlessAllowed: a commit that removes every
// manifest is refused; with allowEmpty it prunes everything.
func TestEmptyRevisionPrunesNothingUnlessAllowed(t *testing.T) {
	t.Parallel()
	const ns = "allow-empty"
	if err := h.Admin.Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		t.Fatal(err)
	}
	repo := h.NewGuard(t, "allow-empty", true, map[string]string{"a.yaml": configMap(ns, "a", "one"), "b.yaml": configMap(ns, "b", "one"), "README.md": "x"})
	h.WaitApplied(t, repo.Guard, repo.Initial)
	empty := repo.Change(t, "remove everything", nil, "a.yaml", "b.yaml")
	waitCondition(t, repo.Guard, v1alpha1.ConditionStalled, metav1.ConditionTrue, v1alpha1.ReasonEmptyRevision, "renders no objects")
	for _, name := range []string{"a", "b"} {
		if _, err := getConfigMap(t, ns, name); err != nil {
			t.Fatalf("an empty revision deleted %s: %v", name, err)
		}
	}
	updateGuard(t, repo.Guard, func(s *v1alpha1.GuardSpec) { s.AllowEmpty = true })
	h.WaitApplied(t, repo.Guard, empty)
	wait.Eventually(t, 30*time.Second, "everything pruned", func() error {
		for _, name := range []string{"a", "b"} {
			if _, err := getConfigMap(t, ns, name); err == nil {
				return fmt.Errorf("%s still exists", name)
			}
		}
		return nil
	})
}

// TestCreateNamespace: namespaces the objects need and Git does not declare
// are created, unlabelled: neither guarded nor pruned.
func TestCreateNamespace(t *testing.T) {
	t.Parallel()
	const ns = "create-ns"
	repo := h.NewGuard(t, "create-ns", true, map[string]string{"cm.yaml": configMap(ns, "cm", "one")},
		func(s *v1alpha1.GuardSpec) { s.CreateNamespace = true })
	h.WaitApplied(t, repo.Guard, repo.Initial)
	var n corev1.Namespace
	if err := h.Admin.Get(context.Background(), client.ObjectKey{Name: ns}, &n); err != nil {
		t.Fatal(err)
	}
	if n.Annotations["driftguard.io/created-by"] != repo.Guard || n.Labels["driftguard.io/guard"] != "" {
		t.Fatalf("namespace annotations %v labels %v", n.Annotations, n.Labels)
	}
	waitValue(t, ns, "cm", "one")
}

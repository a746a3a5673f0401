package faults

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/driftguard/driftguard/api/v1alpha1"
	"github.com/driftguard/driftguard/apply"
	"github.com/driftguard/driftguard/test/wait"
)

// TestOwnershipAfterRestart: an object two Guards declare stays with the
// Guard that applied it when the guard restarts, even when the other
// Guard is reconciled first: here the first (a platform team's) is
// suspended across the restart, so it renders nothing until it is
// resumed, and the second (a tenant's Git, which declares the platform's
// ConfigMap to take it over) renders alone. Before 2026-12-05 ownership
// followed the order in which the new process rendered the Guards: the
// tenant's Guard applied its own content and kept the object.
func TestOwnershipAfterRestart(t *testing.T) {
	const ns, platform, tenant = "fault-owner", "fault-owner-platform", "fault-owner-tenant"
	namespace(t, ns)
	_, revA := newRepo(t, platform, map[string]string{"quota.yaml": cmDoc(ns, "limits", "platform")})
	g := startGuard(t, "--webhook-register=false")
	createGuard(t, platform)
	waitApplied(t, g, platform, revA, 1, 90*time.Second)

	tenantRepo, revB := newRepo(t, tenant, map[string]string{"mine.yaml": cmDoc(ns, "limits", "tenant")})
	createGuard(t, tenant)
	waitConflict(t, g, tenant, revB, platform)

	setSuspend(t, platform, true)
	if err := g.proc().Kill(); err != nil {
		t.Fatal(err)
	}
	g.start()
	// The tenant's next revision, reconciled by the new process alone.
	revB2 := commit(t, tenantRepo, "one more", map[string]string{"more.yaml": cmDoc(ns, "tenant-own", "tenant")})
	if err := g.proc().NotifyPush(t.Context(), git.URL(tenant)); err != nil {
		t.Fatal(err)
	}
	waitConflict(t, g, tenant, revB2, platform)
	wantValue(t, ns, "limits", "platform", platform)
	wantValue(t, ns, "tenant-own", "tenant", tenant)

	setSuspend(t, platform, false)
	waitApplied(t, g, platform, revA, 1, 60*time.Second)
	waitConflict(t, g, tenant, revB2, platform)
	wantValue(t, ns, "limits", "platform", platform)
}

// waitConflict waits until Guard name has applied rev and reports that
// Guard owner manages one of its objects.
func waitConflict(t *testing.T, g *guardProc, name, rev, owner string) {
	t.Helper()
	wait.Eventually(t, 60*time.Second, fmt.Sprintf("guard %s at %s reports an object of guard %s", name, rev[:7], owner), func() error {
		g.alive()
		got, err := getGuard(name)
		if err != nil {
			return err
		}
		c := meta.FindStatusCondition(got.Status.Conditions, v1alpha1.ConditionReady)
		if got.Status.LastAppliedRevision != rev || c == nil || c.Reason != v1alpha1.ReasonObjectConflict || !strings.Contains(c.Message, "(guard "+owner+")") {
			return fmt.Errorf("revision %q, Ready %+v", got.Status.LastAppliedRevision, c)
		}
		return nil
	})
}

// wantValue fails unless ConfigMap ns/name holds value and names guard.
func wantValue(t *testing.T, ns, name, value, guard string) {
	t.Helper()
	cm, err := kube.CoreV1().ConfigMaps(ns).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if cm.Data["value"] != value || cm.Labels[apply.GuardLabel] != guard {
		t.Fatalf("ConfigMap %s/%s: value %q of guard %q, want %q of guard %q", ns, name, cm.Data["value"], cm.Labels[apply.GuardLabel], value, guard)
	}
}

// setSuspend sets Guard name's spec.suspend.
func setSuspend(t *testing.T, name string, suspend bool) {
	t.Helper()
	patch := fmt.Appendf(nil, `{"spec":{"suspend":%t}}`, suspend)
	if err := admin.Patch(context.Background(), &v1alpha1.Guard{ObjectMeta: metav1.ObjectMeta{Name: name}}, client.RawPatch("application/merge-patch+json", patch)); err != nil {
		t.Fatal(err)
	}
}

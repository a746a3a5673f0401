package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/driftguard/driftguard/api/v1alpha1"
	"github.com/driftguard/driftguard/apply"
	"github.com/driftguard/driftguard/audit"
	"github.com/driftguard/driftguard/reconcile"
	"github.com/driftguard/driftguard/render"
	"github.com/driftguard/driftguard/test/wait"
)

// guardNamespace is the guard's own namespace in this suite (the default of
// --namespace), where the inventories are.
const guardNamespace = "driftguard-system"

// namespaceEditor adds a user who may edit ConfigMaps in ns only (what the
// ClusterRole edit grants there; the control plane of the tests has no
// controller to aggregate edit's rules): a person who may create, label and
// delete ConfigMaps there, and nothing elsewhere. It returns the user's
// kubeconfig.
func namespaceEditor(t *testing.T, user, ns string) string {
	t.Helper()
	kc, _, err := h.Cluster.AddUser(user, nil)
	if err != nil {
		t.Fatal(err)
	}
	role := &rbacv1.Role{
		ObjectMeta: metav1.ObjectMeta{Name: user + "-edit", Namespace: ns},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"configmaps"},
			Verbs: []string{"get", "list", "watch", "create", "update", "patch", "delete"}}},
	}
	rb := &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: user + "-edit", Namespace: ns},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: role.Name},
		Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: user}},
	}
	for _, o := range []client.Object{role, rb} {
		if err := h.Admin.Create(context.Background(), o); err != nil {
			t.Fatalf("let %s edit configmaps in %s: %v", user, ns, err)
		}
	}
	// RBAC takes effect when the API server's authorizer cache has it.
	wait.Eventually(t, 20*time.Second, user+" can create configmaps in "+ns, func() error {
		out, err := h.KubectlAs(t, kc, "auth", "can-i", "create", "configmaps", "-n", ns)
		if err != nil || out != "yes" {
			return fmt.Errorf("can-i: %q %v", out, err)
		}
		return nil
	})
	return kc
}

// inventoryConfigMap returns the inventory ConfigMap of a Guard.
func inventoryConfigMap(t *testing.T, guard string) (*corev1.ConfigMap, error) {
	t.Helper()
	var cm corev1.ConfigMap
	err := h.Admin.Get(context.Background(), client.ObjectKey{Namespace: guardNamespace, Name: reconcile.InventoryName(guard)}, &cm)
	return &cm, err
}

// waitInventoryCount waits until the Guard's stored inventory holds n objects.
func waitInventoryCount(t *testing.T, guard string, n int) *corev1.ConfigMap {
	t.Helper()
	var cm *corev1.ConfigMap
	wait.Eventually(t, 30*time.Second, fmt.Sprintf("inventory of %s holds %d objects", guard, n), func() error {
		var err error
		if cm, err = inventoryConfigMap(t, guard); err != nil {
			return err
		}
		if got := cm.Annotations[reconcile.InventoryObjectsAnnotation]; got != fmt.Sprint(n) {
			return fmt.Errorf("%s objects", got)
		}
		return nil
	})
	return cm
}

// waitKept waits for the audit record of a labelled object prune kept.
func waitKept(t *testing.T, guard, ns, name, reason string) audit.Record {
	t.Helper()
	return h.Audit.Wait(t, 30*time.Second, fmt.Sprintf("prune keeps %s/%s", ns, name), func(r audit.Record) bool {
		return r.Type == audit.Prune && r.Guard == guard && r.Action == string(reconcile.Kept) &&
			r.Object.Namespace == ns && r.Object.Name == name && strings.Contains(r.Reason, reason)
	})
}

// TestPruneOnlyWhatTheGuardApplied: prune deletes what the guard applied and
// Git no longer holds, and nothing else. A namespace editor who labels her
// own ConfigMap with the Guard's label does not get the guard to delete it,
// nor one she deleted and re-created under the name of an object the guard
// applied: both are reported (an audit record and an Event), not deleted.
func TestPruneOnlyWhatTheGuardApplied(t *testing.T) {
	t.Parallel()
	const ns, guard = "prune-inventory", "prune-inventory"
	selfHeal := false
	repo := h.NewGuard(t, guard, true, map[string]string{
		"ns.yaml":     namespace(ns),
		"keep.yaml":   configMap(ns, "keep", "git"),
		"gone.yaml":   configMap(ns, "gone", "git"),
		"reborn.yaml": configMap(ns, "reborn", "git"),
	}, func(s *v1alpha1.GuardSpec) {
		// So that the editor can delete and re-create an object the guard
		// applied without the webhook denying it or self-heal putting it
		// back first (as during a webhook outage, with self-heal off).
		s.SelfHeal = &selfHeal
		s.Enforcement = v1alpha1.EnforcementWarn
	})
	h.WaitApplied(t, guard, repo.Initial)
	inv := waitInventoryCount(t, guard, 4)
	g := h.Guard(t, guard)
	if len(inv.OwnerReferences) != 1 || inv.OwnerReferences[0].UID != g.UID || inv.OwnerReferences[0].Kind != "Guard" {
		t.Fatalf("inventory owners %+v, want the Guard %s (%s)", inv.OwnerReferences, guard, g.UID)
	}
	reborn, err := getConfigMap(t, ns, "reborn")
	if err != nil {
		t.Fatal(err)
	}
	appliedUID := reborn.UID

	editor := namespaceEditor(t, "mallory", ns)
	run := func(args ...string) {
		t.Helper()
		if out, err := h.KubectlAs(t, editor, args...); err != nil {
			t.Fatalf("kubectl %s as mallory: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	label := apply.GuardLabel + "=" + guard
	// (1) Her own ConfigMap, labelled with the Guard's label.
	run("create", "configmap", "mine", "-n", ns, "--from-literal=owner=mallory")
	run("label", "configmap", "mine", "-n", ns, label)
	// (3) An object the guard applied, deleted and re-created by her under
	// the same name, with the label.
	run("delete", "configmap", "reborn", "-n", ns)
	run("create", "configmap", "reborn", "-n", ns, "--from-literal=owner=mallory")
	run("label", "configmap", "reborn", "-n", ns, label)
	strangerUID := func(name string) types.UID {
		t.Helper()
		cm, err := getConfigMap(t, ns, name)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if cm.Data["owner"] != "mallory" {
			t.Fatalf("%s is not mallory's: %v", name, cm.Data)
		}
		return cm.UID
	}
	mineUID, rebornUID := strangerUID("mine"), strangerUID("reborn")
	if rebornUID == appliedUID {
		t.Fatal("re-created reborn has the UID of the one the guard applied")
	}
	// Reconciles of the same revision neither delete nor adopt them.
	h.WaitReconciles(t, guard, 2)
	waitInventoryCount(t, guard, 4)

	// (2) Git drops gone and reborn: gone is pruned, reborn (now mallory's)
	// and mine are kept and reported.
	rev := repo.Change(t, "drop gone and reborn", nil, "gone.yaml", "reborn.yaml")
	h.WaitApplied(t, guard, rev)
	wait.Eventually(t, 30*time.Second, "gone pruned", func() error {
		if _, err := getConfigMap(t, ns, "gone"); !apierrors.IsNotFound(err) {
			return fmt.Errorf("gone still there (err %v)", err)
		}
		return nil
	})
	h.Audit.Wait(t, 30*time.Second, "prune record of gone", func(r audit.Record) bool {
		return r.Type == audit.Prune && r.Guard == guard && r.Action == string(apply.Deleted) && r.Object.Name == "gone"
	})
	waitKept(t, guard, ns, "mine", "not in the Guard's inventory")
	waitKept(t, guard, ns, "reborn", "not the object the guard applied")
	if got := strangerUID("mine"); got != mineUID {
		t.Fatalf("mine was replaced: UID %s, was %s", got, mineUID)
	}
	if got := strangerUID("reborn"); got != rebornUID {
		t.Fatalf("reborn was replaced: UID %s, was %s", got, rebornUID)
	}
	wait.Eventually(t, 30*time.Second, "Event NotPruned on the Guard", func() error {
		var events corev1.EventList
		if err := h.Admin.List(context.Background(), &events); err != nil {
			return err
		}
		for _, e := range events.Items {
			if e.Reason == "NotPruned" && e.InvolvedObject.Name == guard && strings.Contains(e.Message, "ConfigMap "+ns+"/mine") {
				return nil
			}
		}
		return fmt.Errorf("none among %d events", len(events.Items))
	})
	// The inventory holds what the guard applied and Git still has, with
	// their UIDs, as a restarted guard or a new leader reads it.
	waitInventoryCount(t, guard, 2)
	stored, err := (&reconcile.InventoryStore{Client: h.Admin, Namespace: guardNamespace}).Load(context.Background(), h.Guard(t, guard))
	if err != nil {
		t.Fatal(err)
	}
	keep, err := getConfigMap(t, ns, "keep")
	if err != nil {
		t.Fatal(err)
	}
	var nsObj corev1.Namespace
	if err := h.Admin.Get(context.Background(), client.ObjectKey{Name: ns}, &nsObj); err != nil {
		t.Fatal(err)
	}
	for k, uid := range map[render.ObjectKey]types.UID{
		{Kind: "ConfigMap", Namespace: ns, Name: "keep"}: keep.UID,
		{Kind: "Namespace", Name: ns}:                    nsObj.UID,
	} {
		if it, ok := stored.Get(k); !ok || it.UID != uid || it.Version != "v1" {
			t.Errorf("stored inventory has %s as %+v (present %v), want UID %s", k, it, ok, uid)
		}
	}
	if stored.Len() != 2 {
		t.Errorf("stored inventory holds %v, want keep and the namespace", stored.Keys())
	}

	// A later prune keeps them too.
	rev = repo.Change(t, "change keep", map[string]string{"keep.yaml": configMap(ns, "keep", "git 2")})
	h.WaitApplied(t, guard, rev)
	waitValue(t, ns, "keep", "git 2")
	if got := strangerUID("mine"); got != mineUID {
		t.Fatalf("mine was replaced: UID %s, was %s", got, mineUID)
	}
	if got := strangerUID("reborn"); got != rebornUID {
		t.Fatalf("reborn was replaced: UID %s, was %s", got, rebornUID)
	}
}

// TestPruneUpgradeWithoutInventory: a Guard that has no inventory yet (one
// from before inventories) deletes nothing on its first reconcile: an
// object that carries its label, even one applied as the guard's field
// manager, and that is not in Git is reported, not pruned; what the Guard
// applies from then on is in its inventory and pruned as usual.
func TestPruneUpgradeWithoutInventory(t *testing.T) {
	t.Parallel()
	const ns, guard = "prune-upgrade", "prune-upgrade"
	ctx := context.Background()
	// What the guard of the earlier version applied, and then (Git dropped
	// it) did not prune before the upgrade.
	for _, u := range []*unstructured.Unstructured{
		{Object: map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": ns, "labels": map[string]any{apply.GuardLabel: guard}}}},
		{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
			"metadata": map[string]any{"name": "left-git", "namespace": ns, "labels": map[string]any{apply.GuardLabel: guard}},
			"data":     map[string]any{"value": "from an earlier revision"}}},
	} {
		if err := h.Admin.Apply(ctx, client.ApplyConfigurationFromUnstructured(u), client.FieldOwner(apply.FieldManager), client.ForceOwnership); err != nil {
			t.Fatal(err)
		}
	}
	left, err := getConfigMap(t, ns, "left-git")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := inventoryConfigMap(t, guard); !apierrors.IsNotFound(err) {
		t.Fatalf("an inventory exists before the Guard: %v", err)
	}

	repo := h.NewGuard(t, guard, true, map[string]string{
		"ns.yaml":   namespace(ns),
		"cfg.yaml":  configMap(ns, "cfg", "git"),
		"gone.yaml": configMap(ns, "gone", "git"),
	})
	h.WaitApplied(t, guard, repo.Initial)
	waitKept(t, guard, ns, "left-git", "not in the Guard's inventory")
	waitInventoryCount(t, guard, 3)
	if cm, err := getConfigMap(t, ns, "left-git"); err != nil || cm.UID != left.UID {
		t.Fatalf("left-git pruned or replaced: %v", err)
	}

	rev := repo.Change(t, "drop gone", nil, "gone.yaml")
	h.WaitApplied(t, guard, rev)
	wait.Eventually(t, 30*time.Second, "gone pruned", func() error {
		if _, err := getConfigMap(t, ns, "gone"); !apierrors.IsNotFound(err) {
			return fmt.Errorf("gone still there (err %v)", err)
		}
		return nil
	})
	if cm, err := getConfigMap(t, ns, "left-git"); err != nil || cm.UID != left.UID {
		t.Fatalf("left-git pruned or replaced: %v", err)
	}
	waitInventoryCount(t, guard, 2)
}

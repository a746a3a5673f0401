package e2e

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/driftguard/driftguard/api/v1alpha1"
	"github.com/driftguard/driftguard/apply"
	"github.com/driftguard/driftguard/reconcile"
)

// TestHooksAreNotGuarded: with the webhook on, a hook (here a ConfigMap, a
// kind that is done once created) is created at its phase and then left
// alone: a person may change or delete it, and it is neither reverted nor
// re-created until the next sync. A managed object cannot be made a hook
// from the cluster: the annotation is a change to a managed object, denied.
func TestHooksAreNotGuarded(t *testing.T) {
	t.Parallel()
	const ns = "hooks-unguarded"
	ctx := context.Background()
	hook := hookConfigMap(ns, "run-info", "from the hook", "argocd.argoproj.io/hook", "PostSync")
	repo := h.NewGuard(t, "hooks-unguarded", true, map[string]string{
		"ns.yaml":          namespace(ns),
		"apps/config.yaml": configMap(ns, "managed", "from git"),
		"apps/hook.yaml":   hook,
	})
	g := h.WaitApplied(t, repo.Guard, repo.Initial)
	if g.Status.ManagedObjects != 2 {
		t.Errorf("status.managedObjects %d, want 2 (the namespace and the managed ConfigMap)", g.Status.ManagedObjects)
	}
	var cm corev1.ConfigMap
	if err := h.Admin.Get(ctx, client.ObjectKey{Namespace: ns, Name: "run-info"}, &cm); err != nil {
		t.Fatalf("the PostSync hook was not created: %v", err)
	}
	if cm.Labels[reconcile.HookLabel] != repo.Guard || cm.Labels[apply.GuardLabel] != "" {
		t.Errorf("hook labels %v", cm.Labels)
	}

	// The hook is not guarded: a person changes and deletes it.
	if out, err := h.Kubectl(t, "patch", "configmap", "run-info", "-n", ns, "--type=merge", "-p", `{"data":{"value":"by hand"}}`); err != nil {
		t.Fatalf("a change to a hook was refused: %s", out)
	}
	// A managed object is: making it a hook from the cluster is denied.
	if out, err := h.Kubectl(t, "annotate", "configmap", "managed", "-n", ns, apply.HelmHookAnnotation+"=pre-install"); err == nil || !strings.Contains(out, "managed by Git") {
		t.Fatalf("annotating a managed object as a hook was admitted: %v %s", err, out)
	}
	if out, err := h.Kubectl(t, "delete", "configmap", "run-info", "-n", ns, "--wait=false"); err != nil {
		t.Fatalf("deleting a hook was refused: %s", out)
	}
	// Not drift: the reconciles of the same revision do not re-create it.
	h.WaitReconciles(t, repo.Guard, 3)
	if err := h.Admin.Get(ctx, client.ObjectKey{Namespace: ns, Name: "run-info"}, &cm); err == nil {
		t.Errorf("the deleted hook is back (created %s): a hook must not be kept in sync", cm.CreationTimestamp)
	}
	// The next revision's sync runs it again.
	rev := repo.Change(t, "a new revision", map[string]string{"apps/config.yaml": configMap(ns, "managed", "from git, again")})
	h.WaitApplied(t, repo.Guard, rev)
	// PostSync runs before the sync is done: by Ready, the hook is back.
	if err := h.Admin.Get(ctx, client.ObjectKey{Namespace: ns, Name: "run-info"}, &cm); err != nil || cm.Data["value"] != "from the hook" {
		t.Fatalf("the PostSync hook did not run at the next revision: %v %v", err, cm.Data)
	}
	// Never pruned: the hook leaves Git and stays, the managed object that
	// leaves with it is pruned.
	rev = repo.Change(t, "no hook, no managed ConfigMap", nil, "apps/hook.yaml", "apps/config.yaml")
	h.WaitApplied(t, repo.Guard, rev)
	if _, err := getConfigMap(t, ns, "managed"); err == nil {
		t.Error("the managed ConfigMap that left Git was not pruned")
	}
	if err := h.Admin.Get(ctx, client.ObjectKey{Namespace: ns, Name: "run-info"}, &cm); err != nil {
		t.Fatalf("the hook was pruned when it left Git: %v", err)
	}

	// An object of the hook's name that the guard did not create is never
	// deleted to make room for the hook (before-hook-creation), whatever
	// labels someone gave it.
	if err := h.Admin.Delete(ctx, &cm); err != nil {
		t.Fatal(err)
	}
	planted := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "run-info", Labels: map[string]string{reconcile.HookLabel: repo.Guard}},
		Data: map[string]string{"value": "planted"}}
	if err := h.Admin.Create(ctx, planted); err != nil {
		t.Fatal(err)
	}
	repo.Change(t, "the hook again", map[string]string{"apps/hook.yaml": hook})
	waitCondition(t, repo.Guard, v1alpha1.ConditionReady, metav1.ConditionFalse, v1alpha1.ReasonHookFailed, "did not create as this hook")
	if err := h.Admin.Get(ctx, client.ObjectKey{Namespace: ns, Name: "run-info"}, &cm); err != nil || cm.UID != planted.UID || cm.Data["value"] != "planted" {
		t.Fatalf("the guard deleted or replaced an object it did not create, labelled as its hook: %v %v", err, cm.Data)
	}
}

// TestHookAdoptedByAnotherGuardNotDeleted: a hook one Guard created that
// another Guard's Git then declares (applied over it: the UID stays, the
// label becomes the other Guard's) is that Guard's object: the first
// Guard's next run does not delete it to make room for the hook
// (before-hook-creation), and says why. Until 2026-12-05 the first Guard's
// account, which the webhook exempts, deleted the other Guard's object at
// every revision of its Git.
func TestHookAdoptedByAnotherGuardNotDeleted(t *testing.T) {
	t.Parallel()
	const ns = "hooks-adopted"
	ctx := context.Background()
	hook := hookConfigMap(ns, "shared-name", "from b's hook", "argocd.argoproj.io/hook", "PreSync")
	b := h.NewGuard(t, "hooks-adopted-b", true, map[string]string{
		"ns.yaml":   namespace(ns),
		"own.yaml":  configMap(ns, "b-own", "b"),
		"hook.yaml": hook,
	})
	h.WaitApplied(t, b.Guard, b.Initial)
	var created corev1.ConfigMap
	if err := h.Admin.Get(ctx, client.ObjectKey{Namespace: ns, Name: "shared-name"}, &created); err != nil {
		t.Fatalf("the PreSync hook was not created: %v", err)
	}
	a := h.NewGuard(t, "hooks-adopted-a", true, map[string]string{"cm.yaml": configMap(ns, "shared-name", "a's")})
	h.WaitApplied(t, a.Guard, a.Initial)
	b.Change(t, "another revision", map[string]string{"own.yaml": configMap(ns, "b-own", "b, again")})
	waitCondition(t, b.Guard, v1alpha1.ConditionReady, metav1.ConditionFalse, v1alpha1.ReasonHookFailed, "guard hooks-adopted-a manages the object of that name now")
	var cm corev1.ConfigMap
	if err := h.Admin.Get(ctx, client.ObjectKey{Namespace: ns, Name: "shared-name"}, &cm); err != nil || cm.UID != created.UID || cm.Data["value"] != "a's" || cm.Labels[apply.GuardLabel] != a.Guard {
		t.Fatalf("guard a's object was deleted or replaced by guard b's hook: %v %v %v", err, cm.Data, cm.Labels)
	}
}

// TestHooksAloneAreAnEmptyRevision: a commit that leaves only hooks has no
// object to keep: it is refused like an empty one, and nothing is pruned.
func TestHooksAloneAreAnEmptyRevision(t *testing.T) {
	t.Parallel()
	const ns = "hooks-alone"
	ctx := context.Background()
	hook := hookConfigMap(ns, "run-info", "from the hook", "helm.sh/hook", "post-upgrade")
	repo := h.NewGuard(t, "hooks-alone", true, map[string]string{
		"ns.yaml": namespace(ns), "a.yaml": configMap(ns, "a", "one"), "hook.yaml": hook,
	})
	h.WaitApplied(t, repo.Guard, repo.Initial)
	repo.Change(t, "leave only the hook", nil, "ns.yaml", "a.yaml")
	waitCondition(t, repo.Guard, v1alpha1.ConditionStalled, metav1.ConditionTrue, v1alpha1.ReasonEmptyRevision, "renders only hooks")
	if _, err := getConfigMap(t, ns, "a"); err != nil {
		t.Fatalf("a revision of hooks alone pruned the managed ConfigMap: %v", err)
	}
	var cm corev1.ConfigMap
	if err := h.Admin.Get(ctx, client.ObjectKey{Namespace: ns, Name: "run-info"}, &cm); err == nil {
		t.Errorf("the post-upgrade hook of a refused revision ran")
	}
}

// hookConfigMap is configMap annotated as a hook: annotation (Argo CD's
// or Helm's) set to phase.
func hookConfigMap(ns, name, value, annotation, phase string) string {
	return strings.Replace(configMap(ns, name, value), "  namespace: "+ns+"\n",
		"  namespace: "+ns+"\n  annotations:\n    "+annotation+": "+phase+"\n", 1)
}

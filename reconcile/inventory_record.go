package reconcile

import (
	"context"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	"github.com/driftguard/driftguard/api/v1alpha1"
)

// AppliedBy returns the UID of a live object when it is what the guard
// applied for the Guard named guard: it carries that Guard's label and its
// managed fields hold an Apply entry of the guard's field manager.
//
// This is the inventory's second source, for objects that were in sync and
// not sent again. A manager name is not proof (anyone allowed to apply an
// object can apply it as "driftguard"), so it is trusted only for objects
// Git holds, which the guard would apply anyway: an object that left Git is
// deleted only with the UID the guard recorded while Git held it.
func AppliedBy(live *unstructured.Unstructured, guard string) (types.UID, bool) {
	if guard == "" || live.GetUID() == "" {
		return "", false
	}
	md, _ := live.Object["metadata"].(map[string]any)
	labels, _ := md["labels"].(map[string]any)
	if v, _ := labels[GuardLabel].(string); v != guard {
		return "", false
	}
	// In place: GetManagedFields would convert every entry.
	entries, _ := md["managedFields"].([]any)
	for _, e := range entries {
		m, _ := e.(map[string]any)
		if m["manager"] == FieldManager && m["operation"] == "Apply" && (m["subresource"] == nil || m["subresource"] == "") {
			return live.GetUID(), true
		}
	}
	return "", false
}

// loadInventory reads the Guard's inventory before anything is applied.
func (r *GuardReconciler) loadInventory(ctx context.Context, a *attempt) stop {
	inv, err := r.Inventory.Load(ctx, a.g)
	if err != nil {
		return r.failed(ctx, a.g, v1alpha1.ReasonInventoryFailed, err.Error())
	}
	a.inv = inv
	return nil
}

// recordApplied brings the inventory up to what the guard applied: the
// UIDs the API server answered to its applies since the last reconcile
// (self-heal's included) and in this one, and, for objects of the revision
// not applied now, the live object when it is provably the guard's
// (AppliedBy) and the inventory does not hold it yet (a Guard from before
// inventories, or one with self-heal off). An object is recorded only while
// the revision holds it, or from the answer to the guard's own apply.
func (r *GuardReconciler) recordApplied(a *attempt, cs ChangeSet) {
	for k, it := range r.Inventory.takeApplied(a.g.Name) {
		a.inv.Put(k, it.Version, it.UID)
	}
	for _, e := range cs {
		a.inv.Put(e.Object.Key, e.Object.GVK().Version, e.UID) // nothing when failed (no UID)
	}
	live := r.Applier.Live
	if live == nil {
		return
	}
	for _, o := range a.snap.Objects {
		if _, ok := a.inv.Get(o.Key); ok {
			continue // recorded now, or before (its UID unchanged since, or as the guard last saw it)
		}
		u, known := live.Live(o.GVK(), o.Key.Namespace, o.Key.Name)
		if !known || u == nil {
			continue
		}
		if uid, ok := AppliedBy(u, a.g.Name); ok {
			a.inv.Put(o.Key, o.GVK().Version, uid)
		}
	}
}

package reconcile

import (
	"context"

	"github.com/driftguard/driftguard/apply"

	"github.com/driftguard/driftguard/api/v1alpha1"
)

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
// (apply.AppliedBy) and the inventory does not hold it yet (a Guard from before
// inventories, or one with self-heal off). An object is recorded only while
// the revision holds it, or from the answer to the guard's own apply.
func (r *GuardReconciler) recordApplied(a *attempt, cs apply.ChangeSet) {
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
		if uid, ok := apply.AppliedBy(u, a.g.Name); ok {
			a.inv.Put(o.Key, o.GVK().Version, uid)
		}
	}
}

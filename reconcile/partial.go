package reconcile

import (
	"context"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/driftguard/driftguard/render"
)

// reportPartial writes what a reconcile whose apply failed in part did
// apply: the objects of the revision the guard has applied (its
// inventory holds them, with their UID), the kinds they are of (kept with
// the kinds already in status.inventory, so that prune still finds every
// kind the guard ever applied), and their health. The revision is
// published (the drift watcher and the webhook guard its objects from
// then on), so a Guard that is PartiallySynced shows what is guarded
// rather than 0 objects and no health; status.failed names the rest.
// status.lastAppliedRevision stays the last revision applied whole.
func (r *GuardReconciler) reportPartial(ctx context.Context, a *attempt) {
	g := a.g
	applied, kinds := appliedOf(a.snap, a.inv)
	if applied == 0 {
		return // nothing of the revision is applied: the status stays as it was
	}
	g.Status.ManagedObjects = count32(applied)
	g.Status.Inventory = inventory(mergeKinds(g.Status.Inventory, kinds))
	r.summarizeHealth(ctx, g, a.snap)
}

// appliedOf counts the objects of snap the inventory holds (applied by
// the guard, now or earlier) and lists their kinds, in the order of snap.
func appliedOf(snap *render.Snapshot, inv *Inventory) (int, []schema.GroupVersionKind) {
	if snap == nil || inv == nil {
		return 0, nil
	}
	n := 0
	seen := map[schema.GroupVersionKind]bool{}
	var kinds []schema.GroupVersionKind
	for _, o := range snap.Objects {
		if _, ok := inv.Get(o.Key); !ok {
			continue
		}
		n++
		if gvk := o.GVK(); !seen[gvk] {
			seen[gvk] = true
			kinds = append(kinds, gvk)
		}
	}
	return n, kinds
}

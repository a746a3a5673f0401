package reconcile

import (
	"fmt"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/driftguard/driftguard/apply"
	"github.com/driftguard/driftguard/render"
)

// labelled is a live object that carries a Guard's label, as Prune lists it.
type labelled struct {
	GVK      schema.GroupVersionKind
	Key      render.ObjectKey
	UID      types.UID
	Deleting bool // it has a deletionTimestamp
}

// prunePlan is what Prune does with the labelled objects of one kind.
type prunePlan struct {
	// Delete: in the inventory with this very UID, and no longer in Git.
	Delete []labelled
	// Keep: not in Git, carrying the label, but not what the guard
	// applied: reported, never deleted.
	Keep []Pruned
	// Drop: inventory entries whose object is gone (another object of the
	// same name is there now).
	Drop []render.ObjectKey
}

// Reasons a labelled object that left Git is kept.
const (
	keptNotApplied = "carries the label %s=%s but the guard did not apply it (it is not in the Guard's inventory): not pruned"
	keptOtherUID   = "carries the label %s=%s but is not the object the guard applied (UID %s, applied %s): not pruned"
)

// planPrune decides, for the labelled objects of one kind, which the guard
// deletes: only those it applied itself (inventory key and UID) that Git no
// longer holds. An object that merely carries the label is kept and
// reported; one being deleted already is left alone.
func planPrune(guard string, items []labelled, inGit func(render.ObjectKey) bool, inv *Inventory) prunePlan {
	var p prunePlan
	for _, it := range items {
		if inGit(it.Key) || it.Deleting {
			continue
		}
		entry, ok := inv.Get(it.Key)
		switch {
		case ok && entry.UID == it.UID:
			p.Delete = append(p.Delete, it)
		case ok:
			p.Keep = append(p.Keep, Pruned{GVK: it.GVK, Key: it.Key, UID: it.UID, Reason: fmt.Sprintf(keptOtherUID, apply.GuardLabel, guard, it.UID, entry.UID)})
			p.Drop = append(p.Drop, it.Key)
		default:
			p.Keep = append(p.Keep, Pruned{GVK: it.GVK, Key: it.Key, UID: it.UID, Reason: fmt.Sprintf(keptNotApplied, apply.GuardLabel, guard)})
		}
	}
	return p
}

// groupKind is a kind whatever its version.
type groupKind struct{ Group, Kind string }

// goneFromInventory lists the inventory entries that left Git and that no
// list found carrying the label, among the kinds whose lists answered (or
// whose kind no longer exists): the object is gone, or no longer labelled
// (and then no longer the guard's to prune). Entries of a kind whose list
// failed stay, to be looked at again.
func goneFromInventory(inv *Inventory, inGit func(render.ObjectKey) bool, listed map[groupKind]bool, found map[render.ObjectKey]bool) []render.ObjectKey {
	var out []render.ObjectKey
	for _, k := range inv.Keys() {
		if !inGit(k) && listed[groupKind{k.Group, k.Kind}] && !found[k] {
			out = append(out, k)
		}
	}
	return out
}

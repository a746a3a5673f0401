package reconcile

import (
	"context"
	"errors"
	"fmt"
	"slices"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/driftguard/driftguard/apply"
	"github.com/driftguard/driftguard/render"
)

// Pruned is an object Prune deleted, or kept although it carries the
// Guard's label.
type Pruned struct {
	GVK schema.GroupVersionKind
	Key render.ObjectKey
	UID types.UID
	// Reason says why a kept object was not deleted.
	Reason string
}

// PruneResult is what one Prune did.
type PruneResult struct {
	Deleted []Pruned
	// Kept are objects that carry the Guard's label and are not in Git but
	// that the guard did not apply: never deleted, reported.
	Kept []Pruned
}

// propagation maps spec.prunePropagationPolicy to the API's value;
// background when unset.
func propagation(policy string) metav1.DeletionPropagation {
	switch policy {
	case "foreground":
		return metav1.DeletePropagationForeground
	case "orphan":
		return metav1.DeletePropagationOrphan
	}
	return metav1.DeletePropagationBackground
}

// Prune deletes what the guard applied for guard and the snapshot no longer
// holds, with the given propagation policy, and brings inv up to date.
//
// The objects carrying the guard's label are listed (of the given kinds and
// of the kinds in inv); of those, only the ones in inv with the same UID are
// deleted, each with a UID precondition, so that an object re-created by
// someone else under the same name is never deleted. An object that merely
// carries the label is kept and returned in Kept: the label marks objects
// for the informer and the webhook, but anyone allowed to label an object
// could otherwise have the guard delete it with its own rights.
// Objects are deleted in reverse sync wave order (pruneOrder); Namespaces
// and CRDs go last, after what they held. Inventory entries whose object is
// gone are dropped.
func (a engine) Prune(ctx context.Context, guard string, kinds []schema.GroupVersionKind, snap *render.Snapshot, inv *Inventory, policy metav1.DeletionPropagation) (PruneResult, error) {
	kinds = pruneKinds(kinds, inv)
	inGit := func(k render.ObjectKey) bool { _, ok := snap.Get(k); return ok }
	var res PruneResult
	var errs []error
	listed := map[groupKind]bool{}
	found := map[render.ObjectKey]bool{}
	var deletes []labelled
	reader := a.APIReader()
	for _, gvk := range kinds {
		list := &metav1.PartialObjectMetadataList{}
		list.SetGroupVersionKind(gvk.GroupVersion().WithKind(gvk.Kind + "List"))
		if err := reader.List(ctx, list, client.MatchingLabels{apply.GuardLabel: guard}); err != nil {
			if apply.IsNotFoundOrGone(err) {
				listed[groupKind{gvk.Group, gvk.Kind}] = true // the kind itself is gone: nothing left to prune
				continue
			}
			errs = append(errs, fmt.Errorf("list %s for prune: %w", gvk.Kind, err))
			continue
		}
		listed[groupKind{gvk.Group, gvk.Kind}] = true
		items := make([]labelled, 0, len(list.Items))
		for i := range list.Items {
			item := &list.Items[i]
			key := render.ObjectKey{Group: gvk.Group, Kind: gvk.Kind, Namespace: item.Namespace, Name: item.Name}
			if found[key] {
				continue // listed already, at another version
			}
			found[key] = true
			items = append(items, labelled{GVK: gvk, Key: key, UID: item.UID, Deleting: item.DeletionTimestamp != nil})
		}
		plan := planPrune(guard, items, inGit, inv)
		res.Kept = append(res.Kept, plan.Keep...)
		for _, k := range plan.Drop {
			inv.Remove(k)
		}
		deletes = append(deletes, plan.Delete...)
	}
	for _, it := range pruneOrder(deletes, inv) {
		p, kept, err := a.pruneOne(ctx, it, policy)
		switch {
		case err != nil:
			errs = append(errs, err)
		case kept:
			inv.Remove(it.Key)
			res.Kept = append(res.Kept, p)
		default:
			inv.Remove(it.Key)
			res.Deleted = append(res.Deleted, p)
		}
	}
	for _, k := range goneFromInventory(inv, inGit, listed, found) {
		inv.Remove(k)
	}
	return res, errors.Join(errs...)
}

// pruneOne deletes one object the guard applied, on condition that it
// still has the UID the guard recorded. kept is true when the object there
// now is another one (the precondition failed): it is not the guard's.
func (a engine) pruneOne(ctx context.Context, it labelled, policy metav1.DeletionPropagation) (p Pruned, kept bool, err error) {
	obj := &metav1.PartialObjectMetadata{}
	obj.SetGroupVersionKind(it.GVK)
	obj.SetNamespace(it.Key.Namespace)
	obj.SetName(it.Key.Name)
	uid := it.UID
	err = a.Client.Delete(ctx, obj, client.PropagationPolicy(policy), client.Preconditions{UID: &uid})
	p = Pruned{GVK: it.GVK, Key: it.Key, UID: it.UID}
	switch {
	case err == nil, apply.IsNotFoundOrGone(err):
		return p, false, nil
	case apierrors.IsConflict(err):
		p.Reason = fmt.Sprintf("was re-created under the same name after the guard listed it (not UID %s): not pruned", uid)
		return p, true, nil
	}
	return p, false, fmt.Errorf("prune %s: %w", it.Key, a.ExplainForbidden(err, "delete", it.GVK, it.Key.Namespace))
}

// pruneOrder sorts what prune deletes: the highest sync wave first (the
// wave the inventory recorded while Git held the object), namespaces and
// definitions after everything else; otherwise in the order listed.
func pruneOrder(items []labelled, inv *Inventory) []labelled {
	wave := func(it labelled) int {
		e, _ := inv.Get(it.Key)
		return e.Wave
	}
	slices.SortStableFunc(items, func(x, y labelled) int {
		if c := boolInt(pruneLate(x.GVK)) - boolInt(pruneLate(y.GVK)); c != 0 {
			return c
		}
		return wave(y) - wave(x)
	})
	return items
}

// pruneKinds is kinds and the kinds of the inventory, namespaces and
// definitions last.
func pruneKinds(kinds []schema.GroupVersionKind, inv *Inventory) []schema.GroupVersionKind {
	kinds = slices.Clone(kinds)
	for _, k := range inv.Kinds() {
		if !slices.Contains(kinds, k) {
			kinds = append(kinds, k)
		}
	}
	slices.SortStableFunc(kinds, func(x, y schema.GroupVersionKind) int {
		return boolInt(pruneLate(x)) - boolInt(pruneLate(y))
	})
	return kinds
}

// pruneLate: namespaces and definitions are deleted after the objects they hold.
func pruneLate(gvk schema.GroupVersionKind) bool {
	return (gvk.Group == "" && gvk.Kind == "Namespace") || (gvk.Group == "apiextensions.k8s.io" && gvk.Kind == "CustomResourceDefinition")
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

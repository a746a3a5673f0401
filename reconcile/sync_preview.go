package reconcile

import (
	"context"
	"errors"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/driftguard/driftguard/api/v1alpha1"
	"github.com/driftguard/driftguard/apply"
	"github.com/driftguard/driftguard/drift"
	"github.com/driftguard/driftguard/render"
)

// Removals returns the fields a sync would remove from live: the fields
// the guard's own apply owns (managedFields of apply.FieldManager) that desired
// no longer sets and no other manager (the control plane's aside) owns,
// which server-side apply removes when the guard applies desired. Each
// change has Added set and Live the value that goes. Fields ignore rules
// hide are not listed (the guard does not send them).
func Removals(desired, live *unstructured.Unstructured, opts drift.Options) []drift.Change {
	sent := apply.AsApplied(desired, live).Object
	// Additions of every manager but none: the guard's own fields too.
	all := drift.Additions(sent, live.Object, "\x00", opts)
	if len(all) == 0 {
		return nil
	}
	others := map[string]bool{}
	for _, c := range drift.Additions(sent, live.Object, apply.FieldManager, opts) {
		others[c.Path] = true
	}
	var out []drift.Change
	for _, c := range all {
		if !others[c.Path] {
			out = append(out, c)
		}
	}
	return out
}

// PrunePreview returns what a sync of g at snap would prune, as Prune
// decides it but deleting nothing: the objects carrying g's label that
// left Git and that the guard applied (its inventory, same UID), and those
// that carry the label without being the guard's, which are kept. The
// kinds looked at are the revision's, status.inventory's and the
// inventory's. It reads with r (a person's rights, in the CLI).
func PrunePreview(ctx context.Context, r client.Reader, g *v1alpha1.Guard, snap *render.Snapshot, inv *Inventory) (deleted, kept []Pruned, err error) {
	inGit := func(k render.ObjectKey) bool { _, ok := snap.Get(k); return ok }
	var errs []error
	found := map[render.ObjectKey]bool{}
	for _, gvk := range pruneKinds(mergeKinds(g.Status.Inventory, snap.Kinds()), inv) {
		list := &metav1.PartialObjectMetadataList{}
		list.SetGroupVersionKind(gvk.GroupVersion().WithKind(gvk.Kind + "List"))
		if err := r.List(ctx, list, client.MatchingLabels{apply.GuardLabel: g.Name}); err != nil {
			if apply.IsNotFoundOrGone(err) {
				continue
			}
			errs = append(errs, fmt.Errorf("list %s: %w", gvk.Kind, err))
			continue
		}
		items := make([]labelled, 0, len(list.Items))
		for i := range list.Items {
			item := &list.Items[i]
			key := render.ObjectKey{Group: gvk.Group, Kind: gvk.Kind, Namespace: item.Namespace, Name: item.Name}
			if found[key] {
				continue
			}
			found[key] = true
			items = append(items, labelled{GVK: gvk, Key: key, UID: item.UID, Deleting: item.DeletionTimestamp != nil})
		}
		plan := planPrune(g.Name, items, inGit, inv)
		for _, it := range plan.Delete {
			deleted = append(deleted, Pruned{GVK: it.GVK, Key: it.Key, UID: it.UID})
		}
		kept = append(kept, plan.Keep...)
	}
	return deleted, kept, errors.Join(errs...)
}

package reconcile

import (
	"context"
	"errors"
	"fmt"
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/driftguard/driftguard/gitstore"
)

// Pruned is an object Prune deleted.
type Pruned struct {
	GVK schema.GroupVersionKind
	Key gitstore.ObjectKey
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

// Prune deletes objects labelled as managed by guard, of the given kinds, that
// the snapshot no longer holds, with the given propagation policy. Only
// objects carrying the guard's label are ever deleted, so nothing the guard
// did not create is touched. Namespaces go last, after what they held.
func (a *Applier) Prune(ctx context.Context, guard string, kinds []schema.GroupVersionKind, snap *gitstore.Snapshot, policy metav1.DeletionPropagation) ([]Pruned, error) {
	kinds = slices.Clone(kinds)
	slices.SortStableFunc(kinds, func(x, y schema.GroupVersionKind) int {
		return boolInt(pruneLate(x)) - boolInt(pruneLate(y))
	})
	var deleted []Pruned
	var errs []error
	reader := a.reader()
	for _, gvk := range kinds {
		list := &metav1.PartialObjectMetadataList{}
		list.SetGroupVersionKind(gvk.GroupVersion().WithKind(gvk.Kind + "List"))
		if err := reader.List(ctx, list, client.MatchingLabels{GuardLabel: guard}); err != nil {
			if IsNotFoundOrGone(err) {
				continue // the kind itself is gone: nothing left to prune
			}
			errs = append(errs, fmt.Errorf("list %s for prune: %w", gvk.Kind, err))
			continue
		}
		for i := range list.Items {
			item := &list.Items[i]
			key := gitstore.ObjectKey{Group: gvk.Group, Kind: gvk.Kind, Namespace: item.Namespace, Name: item.Name}
			if _, ok := snap.Get(key); ok || item.DeletionTimestamp != nil {
				continue
			}
			item.SetGroupVersionKind(gvk)
			err := a.Client.Delete(ctx, item, client.PropagationPolicy(policy))
			if err != nil && !IsNotFoundOrGone(err) {
				errs = append(errs, fmt.Errorf("prune %s: %w", key, err))
				continue
			}
			deleted = append(deleted, Pruned{GVK: gvk, Key: key})
		}
	}
	return deleted, errors.Join(errs...)
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

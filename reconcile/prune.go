package reconcile

import (
	"context"
	"errors"
	"fmt"

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

// Prune deletes objects labelled as managed by guard, of the given kinds, that
// the snapshot no longer holds. Only objects carrying the guard's label are
// ever deleted, so nothing the guard did not create is touched.
func (a *Applier) Prune(ctx context.Context, guard string, kinds []schema.GroupVersionKind, snap *gitstore.Snapshot) ([]Pruned, error) {
	var deleted []Pruned
	var errs []error
	reader := a.Reader
	if reader == nil {
		reader = a.Client
	}
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
			err := a.Client.Delete(ctx, item, client.PropagationPolicy(metav1.DeletePropagationBackground))
			if err != nil && !IsNotFoundOrGone(err) {
				errs = append(errs, fmt.Errorf("prune %s: %w", key, err))
				continue
			}
			deleted = append(deleted, Pruned{GVK: gvk, Key: key})
		}
	}
	return deleted, errors.Join(errs...)
}

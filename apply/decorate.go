package apply

import (
	"maps"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/driftguard/driftguard/render"
)

// Decorate returns the snapshot as a guard applies it: every object carries
// the inventory label (unless guard is empty), and a namespaced object Git
// leaves without a namespace gets "default". Hooks (IsHook) are left out:
// package reconcile runs them at a phase of a sync; they are never kept in
// sync, guarded or pruned.
func Decorate(c client.Client, guard string, snap *render.Snapshot) (*render.Snapshot, error) {
	// The Guard that fetched the snapshot finishes its objects in place and
	// freezes them (render.Object); another Guard of the same URL and path
	// finishes copies of the metadata of their decodings.
	inPlace, release := snap.Claim()
	defer release()
	objs := make([]*render.Object, 0, len(snap.Objects))
	rekeyed := false
	for _, o := range snap.Objects {
		if IsHook(o) {
			rekeyed = true // a snapshot of fewer objects
			continue
		}
		obj := o.Obj().Object
		md, _ := obj["metadata"].(map[string]any)
		if !inPlace {
			obj, md = maps.Clone(obj), maps.Clone(md)
		}
		if md == nil {
			md = map[string]any{}
		}
		obj["metadata"] = md
		u := &unstructured.Unstructured{Object: obj}
		if guard != "" {
			labels, _ := md["labels"].(map[string]any)
			if !inPlace || labels == nil {
				labels = maps.Clone(labels)
				if labels == nil {
					labels = map[string]any{}
				}
			}
			if len(labels) == 0 {
				// The labels the API server would have given the object
				// had the guard's label not made its labels non-empty.
				ServerDefaultedLabels(u, labels)
			}
			labels[GuardLabel] = guard
			md["labels"] = labels
		}
		if u.GetNamespace() == "" && Namespaced(c, u.GroupVersionKind()) {
			md["namespace"] = corev1.NamespaceDefault
		} else if u.GetNamespace() != "" && clusterScoped(c, u.GroupVersionKind()) {
			// The API server drops a cluster-scoped object's namespace;
			// keyed with Git's, the object would never be found by the
			// key of its live self (informer, webhook, inventory).
			delete(md, "namespace")
		}
		if inPlace {
			if k := render.KeyOf(u); k != o.Key {
				o.Key, rekeyed = k, true
			}
			objs = append(objs, o)
			continue
		}
		objs = append(objs, render.NewObjectFrom(u, o))
	}
	if inPlace && !rekeyed {
		// The same objects under the same keys: the snapshot is its own
		// decoration, and a second index of it would only cost memory.
		snap.Freeze()
		return snap, nil
	}
	out, err := render.NewSnapshot(snap.URL, snap.Revision, objs)
	if err == nil {
		_, done := out.Claim() // its objects are finished: nobody changes them again
		out.Freeze()
		done()
	}
	return out, err
}

// Namespaced reports whether the API server knows gvk as namespaced (false
// while it does not know the kind at all).
func Namespaced(c client.Client, gvk schema.GroupVersionKind) bool {
	ok, err := c.IsObjectNamespaced(&metav1.PartialObjectMetadata{TypeMeta: metav1.TypeMeta{APIVersion: gvk.GroupVersion().String(), Kind: gvk.Kind}})
	return err == nil && ok
}

// clusterScoped reports whether the API server knows gvk as cluster-scoped
// (false while it does not know the kind at all).
func clusterScoped(c client.Client, gvk schema.GroupVersionKind) bool {
	ok, err := c.IsObjectNamespaced(&metav1.PartialObjectMetadata{TypeMeta: metav1.TypeMeta{APIVersion: gvk.GroupVersion().String(), Kind: gvk.Kind}})
	return err == nil && !ok
}

package reconcile

import (
	"maps"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/driftguard/driftguard/api/v1alpha1"
	"github.com/driftguard/driftguard/gitstore"
)

// decorateOnce decorates each fetched snapshot once: the fetcher returns the
// same snapshot while the revision is unchanged.
func (r *GuardReconciler) decorateOnce(g *v1alpha1.Guard, fetched *gitstore.Snapshot) *gitstore.Snapshot {
	r.mu.Lock()
	defer r.mu.Unlock()
	if d, ok := r.decorated[g.Name]; ok && d[0] == fetched {
		return d[1]
	}
	out := r.decorate(g, fetched)
	if prev, ok := r.Store.Snapshot(g.Name); ok {
		out.InheritServerValues(prev)
	}
	if r.decorated == nil {
		r.decorated = map[string][2]*gitstore.Snapshot{}
	}
	r.decorated[g.Name] = [2]*gitstore.Snapshot{fetched, out}
	return out
}

// decorate returns the snapshot as the guard applies it, keeping the
// fetched one if decorating fails.
func (r *GuardReconciler) decorate(g *v1alpha1.Guard, snap *gitstore.Snapshot) *gitstore.Snapshot {
	out, err := Decorate(r.Client, g.Name, snap)
	if err != nil {
		// Defaulting a namespace can only collide with an object already
		// in "default"; keep the undecorated keys rather than lose objects.
		r.Log.Error(err, "decorate snapshot", "guard", g.Name)
		return snap
	}
	return out
}

// Decorate returns the snapshot as a guard applies it: every object carries
// the inventory label (unless guard is empty), and a namespaced object Git
// leaves without a namespace gets "default".
func Decorate(c client.Client, guard string, snap *gitstore.Snapshot) (*gitstore.Snapshot, error) {
	// The Guard that fetched the snapshot finishes its objects in place and
	// freezes them (gitstore.Object); another Guard of the same URL and path
	// finishes copies of the metadata of their decodings.
	inPlace, release := snap.Claim()
	defer release()
	objs := make([]*gitstore.Object, 0, len(snap.Objects))
	rekeyed := false
	for _, o := range snap.Objects {
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
			labels[GuardLabel] = guard
			md["labels"] = labels
		}
		if u.GetNamespace() == "" && namespaced(c, u.GroupVersionKind()) {
			md["namespace"] = corev1.NamespaceDefault
		}
		if inPlace {
			if k := gitstore.KeyOf(u); k != o.Key {
				o.Key, rekeyed = k, true
			}
			objs = append(objs, o)
			continue
		}
		objs = append(objs, gitstore.NewObjectFrom(u, o))
	}
	if inPlace && !rekeyed {
		// The same objects under the same keys: the snapshot is its own
		// decoration, and a second index of it would only cost memory.
		snap.Freeze()
		return snap, nil
	}
	out, err := gitstore.NewSnapshot(snap.URL, snap.Revision, objs)
	if err == nil {
		_, done := out.Claim() // its objects are finished: nobody changes them again
		out.Freeze()
		done()
	}
	return out, err
}

func namespaced(c client.Client, gvk schema.GroupVersionKind) bool {
	ok, err := c.IsObjectNamespaced(&metav1.PartialObjectMetadata{TypeMeta: metav1.TypeMeta{APIVersion: gvk.GroupVersion().String(), Kind: gvk.Kind}})
	return err == nil && ok
}

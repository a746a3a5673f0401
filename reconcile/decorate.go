package reconcile

import (
	"maps"
	"slices"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/driftguard/driftguard/api/v1alpha1"
	"github.com/driftguard/driftguard/render"
)

// prepared is a fetched snapshot as a Guard applies it: decorated, and
// ordered into waves and hooks (or why it cannot be ordered).
type prepared struct {
	fetched, decorated *render.Snapshot
	plan               *SyncPlan // waves of decorated; hooks as the guard creates them
	err                error     // a bad ordering annotation: the revision cannot be applied
}

// prepareOnce decorates and orders each fetched snapshot once: the fetcher
// returns the same snapshot while the revision is unchanged.
func (r *GuardReconciler) prepareOnce(g *v1alpha1.Guard, fetched *render.Snapshot) *prepared {
	r.mu.Lock()
	defer r.mu.Unlock()
	if p, ok := r.decorated[g.Name]; ok && p.fetched == fetched {
		return p
	}
	p := &prepared{fetched: fetched}
	// Ordered as Git has it, before decorating: the hooks' annotations
	// are Git's, and the plan says which objects are hooks.
	gitPlan, err := PlanSync(fetched.Objects)
	if err != nil {
		p.err = err
		return p // not kept: nothing of it is applied
	}
	out := r.decorate(g, fetched)
	if out == fetched && slices.ContainsFunc(fetched.Objects, IsHook) {
		// Decorating failed and kept the fetched objects: never publish
		// its hooks as objects to keep in sync.
		managed, err := render.NewSnapshot(fetched.URL, fetched.Revision, slices.DeleteFunc(slices.Clone(fetched.Objects), IsHook))
		if err != nil {
			p.err = err
			return p
		}
		out = managed
	}
	if prev, ok := r.Store.Snapshot(g.Name); ok {
		out.InheritServerValues(prev)
	}
	plan, err := PlanSync(out.Objects)
	if err != nil {
		p.err = err // unreachable: the same annotations parsed above
		return p
	}
	plan.Hooks = SyncHooks(r.Client, g.Name, gitPlan)
	p.decorated, p.plan = out, plan
	if r.decorated == nil {
		r.decorated = map[string]*prepared{}
	}
	r.decorated[g.Name] = p
	return p
}

// decorate returns the snapshot as the guard applies it, keeping the
// fetched one if decorating fails.
func (r *GuardReconciler) decorate(g *v1alpha1.Guard, snap *render.Snapshot) *render.Snapshot {
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
// leaves without a namespace gets "default". Hooks (IsHook) are left out:
// they are run at a phase of a sync (SyncHooks), never kept in sync,
// guarded or pruned.
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
		if u.GetNamespace() == "" && namespaced(c, u.GroupVersionKind()) {
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

func namespaced(c client.Client, gvk schema.GroupVersionKind) bool {
	ok, err := c.IsObjectNamespaced(&metav1.PartialObjectMetadata{TypeMeta: metav1.TypeMeta{APIVersion: gvk.GroupVersion().String(), Kind: gvk.Kind}})
	return err == nil && ok
}

// clusterScoped reports whether the API server knows gvk as cluster-scoped
// (false while it does not know the kind at all).
func clusterScoped(c client.Client, gvk schema.GroupVersionKind) bool {
	ok, err := c.IsObjectNamespaced(&metav1.PartialObjectMetadata{TypeMeta: metav1.TypeMeta{APIVersion: gvk.GroupVersion().String(), Kind: gvk.Kind}})
	return err == nil && !ok
}

// SyncHooks returns the hooks of a fetched snapshot as the guard creates
// them: in their namespace ("default" for a namespaced object Git leaves
// without one) and labelled HookLabel=guard, never GuardLabel, so that the
// informer, the webhook and prune never take them for managed objects.
// The hooks are copies; snap is not changed.
func SyncHooks(c client.Client, guard string, plan *SyncPlan) []*Hook {
	out := make([]*Hook, 0, len(plan.Hooks))
	for _, h := range plan.Hooks {
		u := h.Object.Obj().DeepCopy()
		labels := u.GetLabels()
		if labels == nil {
			labels = map[string]string{}
		}
		delete(labels, GuardLabel)
		serverLabels := len(labels) == 0
		if serverLabels {
			// As the API server would have labelled it without HookLabel
			// (a hook Job's job-name; its controller-uid needs the UID).
			defaulted := map[string]any{}
			ServerDefaultedLabels(u, defaulted)
			for k, v := range defaulted {
				labels[k] = v.(string)
			}
		}
		labels[HookLabel] = guard
		u.SetLabels(labels)
		if u.GetNamespace() == "" && namespaced(c, u.GroupVersionKind()) {
			u.SetNamespace(corev1.NamespaceDefault)
		}
		cp := *h
		cp.Object = render.NewObjectFrom(u, h.Object)
		cp.ServerLabels = serverLabels
		out = append(out, &cp)
	}
	return out
}

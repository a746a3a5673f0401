package reconcile

import (
	"slices"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/driftguard/driftguard/api/v1alpha1"
	"github.com/driftguard/driftguard/apply"
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
	if out == fetched && slices.ContainsFunc(fetched.Objects, apply.IsHook) {
		// Decorating failed and kept the fetched objects: never publish
		// its hooks as objects to keep in sync.
		managed, err := render.NewSnapshot(fetched.URL, fetched.Revision, slices.DeleteFunc(slices.Clone(fetched.Objects), apply.IsHook))
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
	out, err := apply.Decorate(r.Client, g.Name, snap)
	if err != nil {
		// Defaulting a namespace can only collide with an object already
		// in "default"; keep the undecorated keys rather than lose objects.
		r.Log.Error(err, "decorate snapshot", "guard", g.Name)
		return snap
	}
	return out
}

// SyncHooks returns the hooks of a fetched snapshot as the guard creates
// them: in their namespace ("default" for a namespaced object Git leaves
// without one) and labelled HookLabel=guard, never apply.GuardLabel, so
// that the informer, the webhook and prune never take them for managed
// objects. The hooks are copies; snap is not changed.
func SyncHooks(c client.Client, guard string, plan *SyncPlan) []*Hook {
	out := make([]*Hook, 0, len(plan.Hooks))
	for _, h := range plan.Hooks {
		u := h.Object.Obj().DeepCopy()
		labels := u.GetLabels()
		if labels == nil {
			labels = map[string]string{}
		}
		delete(labels, apply.GuardLabel)
		serverLabels := len(labels) == 0
		if serverLabels {
			// As the API server would have labelled it without HookLabel
			// (a hook Job's job-name; its controller-uid needs the UID).
			defaulted := map[string]any{}
			apply.ServerDefaultedLabels(u, defaulted)
			for k, v := range defaulted {
				labels[k] = v.(string)
			}
		}
		labels[HookLabel] = guard
		u.SetLabels(labels)
		if u.GetNamespace() == "" && apply.Namespaced(c, u.GroupVersionKind()) {
			u.SetNamespace(corev1.NamespaceDefault)
		}
		cp := *h
		cp.Object = render.NewObjectFrom(u, h.Object)
		cp.ServerLabels = serverLabels
		out = append(out, &cp)
	}
	return out
}

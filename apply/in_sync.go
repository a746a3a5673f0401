package apply

import (
	"unique"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/driftguard/driftguard/drift"
	"github.com/driftguard/driftguard/render"
)

// compareInputs names what the comparison of an object with its live state
// reads besides the two: its Guard's ignore rules and its kind's schema. A
// verdict kept under other inputs (the Guard's rules changed: Rules returns
// a new slice; the schema was read again) does not hold.
type compareInputs struct {
	guard  string
	rules  **drift.Rule // the first of the rules; held, so no new slice can take its address
	nrules int
	schema *drift.Schema
}

// compareInputs returns the inputs of a comparison as one handle: the
// objects of a Guard and kind share it, and a verdict holds a pointer.
func (a *Applier) compareInputs(guard string, gvk schema.GroupVersionKind) unique.Handle[compareInputs] {
	in := compareInputs{guard: guard, schema: a.Schemas.For(gvk)}
	if a.Rules != nil {
		if rules := a.Rules(guard); len(rules) > 0 {
			in.rules, in.nrules = &rules[0], len(rules)
		}
	}
	return unique.Make(in)
}

// knownInSync returns the UID of o's live object when o's verdict says it
// was in sync at the resourceVersion the cache holds now, under the inputs
// of now: then neither object is decoded nor compared again.
func (a *Applier) knownInSync(o *render.Object) (types.UID, bool) {
	v, ok := o.InSync()
	if !ok {
		return "", false
	}
	in, ok := v.Inputs.(unique.Handle[compareInputs])
	if !ok || in != a.compareInputs(in.Value().guard, o.GVK()) {
		return "", false
	}
	rv, ok := a.Live.LiveVersion(o.GVK(), o.Key.Namespace, o.Key.Name)
	if !ok || rv != v.ResourceVersion {
		return "", false
	}
	return v.UID, true
}

// compareKept compares o with live and keeps the verdict when they are in
// sync (and live is what the guard applied): the UID then.
func (a *Applier) compareKept(o *render.Object, live *unstructured.Unstructured) (types.UID, bool) {
	guard := o.Obj().GetLabels()[GuardLabel]
	return o.KeepInSync(live.GetResourceVersion(), a.compareInputs(guard, o.GVK()), func() (types.UID, bool) {
		if len(o.Drift(live.Object, a.Options(o.Obj(), live.Object))) != 0 {
			return "", false
		}
		return AppliedBy(live, guard)
	})
}

// keepAnswer compares want with what the API server stored for its apply,
// so that the next full reconcile, finding that resourceVersion in the
// cache, trusts it without decoding either.
func (a *Applier) keepAnswer(want *render.Object, stored *unstructured.Unstructured) {
	if a.Live != nil {
		a.compareKept(want, stored)
	}
}

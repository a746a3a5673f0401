package apply

import (
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/driftguard/driftguard/drift"
)

// Options returns the comparison options for a desired object and its live
// state: its Guard's ignore rules and its kind's schema (Schemas).
func (a *Applier) Options(desired *unstructured.Unstructured, live map[string]any) drift.Options {
	gvk := desired.GroupVersionKind()
	var opts drift.Options
	if a.Rules != nil {
		if rules := a.Rules(desired.GetLabels()[GuardLabel]); len(rules) > 0 {
			opts = drift.For(rules, gvk.Group, gvk.Kind, desired.GetNamespace(), desired.GetName(), live)
		}
	}
	opts.Schema = a.Schemas.For(gvk)
	return opts
}

// WriteOptions returns the ignore rules for one write by user to a managed
// object, as the admission webhook decides it (drift.ForWrite): updated is
// the object the write would store.
func (a *Applier) WriteOptions(desired *unstructured.Unstructured, updated map[string]any, user string) drift.Options {
	gvk := desired.GroupVersionKind()
	var opts drift.Options
	if a.Rules != nil {
		if rules := a.Rules(desired.GetLabels()[GuardLabel]); len(rules) > 0 {
			opts = drift.ForWrite(rules, gvk.Group, gvk.Kind, desired.GetNamespace(), desired.GetName(), updated, user)
		}
	}
	opts.Schema = a.Schemas.For(gvk)
	return opts
}

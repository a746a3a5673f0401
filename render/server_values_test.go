package render

import (
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/driftguard/driftguard/drift"
)

func TestServerValuesAndInherit(t *testing.T) {
	obj := func(name, extra string) *Object {
		u := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "example.com/v1", "kind": "Widget",
			"metadata": map[string]any{"name": name, "namespace": "ns"},
			"spec":     map[string]any{"extra": extra},
		}}
		return NewObject(u, Source{})
	}
	snap := func(objs ...*Object) *Snapshot {
		s, err := NewSnapshot("u", "r", objs)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	pruned := map[string]any{"apiVersion": "example.com/v1", "kind": "Widget", "metadata": map[string]any{"name": "a", "namespace": "ns"}, "spec": map[string]any{}}

	a := obj("a", "x")
	if _, checked := a.ServerValues(); checked {
		t.Fatal("a new object is not checked")
	}
	if got := a.Drift(pruned, drift.Options{}); len(got) != 1 {
		t.Fatalf("unchecked: the pruned field is drift by text: %v", got)
	}
	a.SetServerValues(drift.ServerValuesOf(a.Obj().Object, pruned, drift.Options{}))
	if got := a.Drift(pruned, drift.Options{}); len(got) != 0 {
		t.Fatalf("with server values the pruned field is no drift: %v", got)
	}

	prev := snap(a, obj("b", "y"))
	same, changed := obj("a", "x"), obj("b", "z")
	next := snap(same, changed)
	next.InheritServerValues(prev)
	if _, checked := same.ServerValues(); !checked {
		t.Error("an unchanged object inherits its server values")
	}
	if _, checked := changed.ServerValues(); checked {
		t.Error("a changed object must be checked again")
	}
}

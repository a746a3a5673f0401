package render

import (
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	"github.com/driftguard/driftguard/drift"
)

func TestVerdict(t *testing.T) {
	cm := func(value string) *unstructured.Unstructured {
		return &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
			"metadata": map[string]any{"name": "web", "namespace": "shop"}, "data": map[string]any{"value": value}}}
	}
	inSync := func() (types.UID, bool) { return "uid-1", true }
	drifted := func() (types.UID, bool) { return "", false }
	tests := []struct {
		name string
		do   func(o *Object)
		want bool // a verdict holds afterwards
	}{
		{"kept when in sync", func(o *Object) { o.KeepInSync("7", "rules", inSync) }, true},
		{"not kept when drifted", func(o *Object) { o.KeepInSync("7", "rules", drifted) }, false},
		{"not kept without a resourceVersion", func(o *Object) { o.KeepInSync("", "rules", inSync) }, false},
		{"void once the server values change", func(o *Object) {
			o.KeepInSync("7", "rules", inSync)
			o.SetServerValues(drift.ServerValues{})
		}, false},
		{"void once the object changes", func(o *Object) {
			o.KeepInSync("7", "rules", inSync)
			o.SetObj(cm("other"))
		}, false},
		{"void when the server values change during the comparison", func(o *Object) {
			o.KeepInSync("7", "rules", func() (types.UID, bool) {
				o.SetServerValues(drift.ServerValues{})
				return "uid-1", true
			})
		}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := NewObject(cm("git"), Source{})
			tt.do(o)
			v, ok := o.InSync()
			if ok != tt.want {
				t.Fatalf("verdict held = %v, want %v (%+v)", ok, tt.want, v)
			}
			if ok && (v.ResourceVersion != "7" || v.Inputs != "rules" || v.UID != "uid-1") {
				t.Fatalf("verdict %+v", v)
			}
		})
	}
}

func TestVerdictInherited(t *testing.T) {
	cm := func(name, value string) *unstructured.Unstructured {
		return &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
			"metadata": map[string]any{"name": name, "namespace": "shop"}, "data": map[string]any{"value": value}}}
	}
	snap := func(values ...string) *Snapshot {
		var objs []*Object
		for i, v := range values {
			objs = append(objs, NewObject(cm(string(rune('a'+i)), v), Source{}))
		}
		s, err := NewSnapshot("https://git.example/repo", "rev", objs)
		if err != nil {
			t.Fatal(err)
		}
		s.Freeze()
		return s
	}
	prev := snap("one", "two")
	for _, o := range prev.Objects {
		o.SetServerValues(nil)
		o.KeepInSync("7", "rules", func() (types.UID, bool) { return "uid", true })
	}
	next := snap("one", "changed")
	next.InheritServerValues(prev)
	if _, ok := next.Objects[0].InSync(); !ok {
		t.Error("unchanged object lost its verdict")
	}
	if _, ok := next.Objects[1].InSync(); ok {
		t.Error("changed object kept the verdict of its old content")
	}
}

package render

import (
	"math"
	"reflect"
	"runtime"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

func TestObjectFreeze(t *testing.T) {
	cm := func(value any) *unstructured.Unstructured {
		return &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "v1", "kind": "ConfigMap",
			"metadata": map[string]any{"name": "cfg", "namespace": "shop", "labels": map[string]any{"app": "web"}},
			"data":     map[string]any{"value": value},
		}}
	}
	tests := []struct {
		name   string
		obj    *unstructured.Unstructured
		frozen bool
		want   map[string]any // what Obj returns after Freeze
	}{
		{"a string", cm("v1"), true, cm("v1").Object},
		{"an integer stays an int64", cm(int64(3)), true, cm(int64(3)).Object},
		{"a fraction stays a float64", cm(0.5), true, cm(0.5).Object},
		{"a NaN cannot be JSON: kept as it is", cm(math.NaN()), false, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := NewObject(tt.obj, Source{Path: "cm.yaml", Line: 1})
			snap, err := NewSnapshot("https://git.example/x.git", "abc", []*Object{o})
			if err != nil {
				t.Fatal(err)
			}
			snap.Freeze()
			if got := o.raw != nil; got != tt.frozen {
				t.Fatalf("frozen = %v, want %v", got, tt.frozen)
			}
			if o.Key != (ObjectKey{Kind: "ConfigMap", Namespace: "shop", Name: "cfg"}) || o.GVK().Kind != "ConfigMap" {
				t.Fatalf("key %v gvk %v", o.Key, o.GVK())
			}
			if !tt.frozen {
				if o.Obj() != tt.obj {
					t.Fatal("an object that cannot be frozen must stay the same object")
				}
				return
			}
			first := o.Obj()
			if !reflect.DeepEqual(first.Object, tt.want) {
				t.Fatalf("decoded %#v, want %#v", first.Object, tt.want)
			}
			if o.Obj() != first {
				t.Fatal("a decoding still in use must be returned again, not decoded twice")
			}
			runtime.KeepAlive(first)
			if !o.sameContent(NewObject(&unstructured.Unstructured{Object: tt.want}, Source{})) {
				t.Fatal("sameContent: a frozen object differs from the same content unfrozen")
			}
		})
	}
}

func TestSetObjBeforeFreeze(t *testing.T) {
	o := NewObject(&unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "a"}}}, Source{})
	o.SetObj(&unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "b", "namespace": "shop"}}})
	if o.Key.Name != "b" || o.Key.Namespace != "shop" {
		t.Fatalf("SetObj did not re-key: %v", o.Key)
	}
}

package reconcile

import (
	"reflect"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/driftguard/driftguard/gitstore"
)

func TestStageOrdersDefinitionsFirst(t *testing.T) {
	mk := func(apiVersion, kind, name string) *gitstore.Object {
		u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": apiVersion, "kind": kind, "metadata": map[string]any{"name": name}}}
		return &gitstore.Object{Key: gitstore.KeyOf(u), Obj: u}
	}
	objs := []*gitstore.Object{
		mk("apps/v1", "Deployment", "web"),
		mk("v1", "Namespace", "shop"),
		mk("example.com/v1", "Widget", "w"),
		mk("apiextensions.k8s.io/v1", "CustomResourceDefinition", "widgets.example.com"),
		mk("v1", "ConfigMap", "cfg"),
	}
	first, rest := stage(objs)
	names := func(os []*gitstore.Object) []string {
		var out []string
		for _, o := range os {
			out = append(out, o.Key.Name)
		}
		return out
	}
	if got, want := names(first), []string{"widgets.example.com", "shop"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("first stage = %v, want %v", got, want)
	}
	if got, want := names(rest), []string{"web", "w", "cfg"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("second stage = %v, want %v (file order kept)", got, want)
	}
}

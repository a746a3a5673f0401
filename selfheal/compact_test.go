package selfheal

import (
	"reflect"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

func TestCompactRoundTrip(t *testing.T) {
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apps/v1", "kind": "Deployment",
		"metadata": map[string]any{"name": "web", "namespace": "shop", "resourceVersion": "42",
			"labels": map[string]any{"driftguard.io/guard": "shop", "app": "web"}},
		"spec": map[string]any{"replicas": int64(3), "ratio": 0.5, "paused": false,
			"template": map[string]any{"spec": map[string]any{"containers": []any{map[string]any{"name": "app", "image": "nginx"}}}}},
	}}
	c, err := compact(u, "driftguard.io/guard")
	if err != nil {
		t.Fatal(err)
	}
	if c.Name != "web" || c.Namespace != "shop" || c.ResourceVersion != "42" || len(c.Labels) != 1 || c.Labels["driftguard.io/guard"] != "shop" {
		t.Fatalf("metadata kept for the cache: %+v", c.ObjectMeta)
	}
	if c.GroupVersionKind().Kind != "Deployment" {
		t.Fatalf("kind %v", c.GroupVersionKind())
	}
	back, err := c.expand()
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(back.Object, u.Object) {
		t.Fatalf("round trip changed the object:\n%v\n%v", back.Object, u.Object)
	}
	cp := c.DeepCopyObject().(*compactObject)
	cp.Labels["x"] = "y"
	if _, ok := c.Labels["x"]; ok {
		t.Fatal("DeepCopyObject shares the labels")
	}
}

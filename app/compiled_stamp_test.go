package app

import (
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/driftguard/driftguard/compiled"
)

// The API server's stamp is trusted for the resources the stamp policy
// matches (those of objects the policies decide), in the namespaces its
// binding selects; a resource it starts to match counts a settle later,
// one it stops matching at once.
func TestStampsInForceByResource(t *testing.T) {
	cm := schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}
	deploy := schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"}
	mapper := meta.NewDefaultRESTMapper(nil)
	mapper.Add(cm, meta.RESTScopeNamespace)
	mapper.Add(deploy, meta.RESTScopeNamespace)
	l := &compiledLayer{mapper: mapper, excluded: []string{"excluded"}}
	l.inForce.Store(true)
	configMaps := compiled.Resource{Resource: "configmaps", Namespaced: true, Mode: "deny"}
	deployments := compiled.Resource{Group: "apps", Resource: "deployments", Namespaced: true, Mode: "warn"}

	l.stampResources([]compiled.Resource{configMaps}, 0)
	for deadline := time.Now().Add(5 * time.Second); !l.StampsInForce("shop", cm); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("ConfigMaps not stamped after the wait")
		}
	}
	for _, c := range []struct {
		ns   string
		gvk  schema.GroupVersionKind
		want bool
	}{{"shop", cm, true}, {"shop", deploy, false}, {"excluded", cm, false}} {
		if got := l.StampsInForce(c.ns, c.gvk); got != c.want {
			t.Errorf("StampsInForce(%s, %s) = %v, want %v", c.ns, c.gvk.Kind, got, c.want)
		}
	}
	l.stampResources([]compiled.Resource{configMaps, deployments}, time.Hour)
	if l.StampsInForce("shop", deploy) || !l.StampsInForce("shop", cm) {
		t.Error("a resource the policy has just started to match is trusted before the API server loads it, or one it matched is not")
	}
	l.stampResources([]compiled.Resource{deployments}, time.Hour)
	if l.StampsInForce("shop", cm) {
		t.Error("a resource the policy no longer matches is still trusted")
	}

	// Named, dropped and named again: the settle counts from the last
	// time it was named (until 2026-12-06 the first sync's timer trusted
	// it after its own settle).
	l.stampResources([]compiled.Resource{configMaps}, 20*time.Millisecond)
	l.stampResources(nil, 0)
	l.stampResources([]compiled.Resource{configMaps}, time.Hour)
	time.Sleep(50 * time.Millisecond)
	if l.StampsInForce("shop", cm) {
		t.Error("a resource named again is trusted at the settle of the first time it was named")
	}
}

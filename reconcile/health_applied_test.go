package reconcile

import (
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/driftguard/driftguard/api/v1alpha1"
	"github.com/driftguard/driftguard/health"
)

// TestAwaitObserved: AwaitObserved returns at once when the cache holds
// every apply, and after its bound when it does not, the summary then
// saying the object is not shown yet.
func TestAwaitObserved(t *testing.T) {
	fx := cacheFixture{live: map[string]*unstructured.Unstructured{}, health: map[string]health.Result{}}
	gvk := schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"}
	tr := &HealthTracker{Source: fx, Live: fx}
	snap := snapshotOf(t, deploy("web", "", "", 0))

	tr.Applied(deploy("web", "u1", "105", 2))
	fx.live[fixtureKey(gvk, "shop", "web")] = deploy("web", "u1", "105", 2)
	fx.health[fixtureKey(gvk, "shop", "web")] = health.Result{State: health.Healthy}
	tr.AwaitObserved(t.Context(), snap)
	if sum := tr.Summarize(t.Context(), &v1alpha1.Guard{}, snap); sum.State != health.Healthy {
		t.Fatalf("shown: %+v, want Healthy", sum)
	}

	tr.Applied(deploy("web", "u1", "110", 3))
	tr.AwaitObserved(t.Context(), snap)
	if sum := tr.Summarize(t.Context(), &v1alpha1.Guard{}, snap); sum.State != health.Progressing {
		t.Fatalf("not shown: %+v, want Progressing", sum)
	}
}

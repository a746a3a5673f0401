package reconcile

import (
	"context"
	"fmt"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/driftguard/driftguard/api/v1alpha1"
	"github.com/driftguard/driftguard/health"
)

// An object with no health of its own (a custom resource without status)
// neither makes a Guard less than Healthy nor is listed as unhealthy; a
// result that holds only until a time makes the summary look again just
// after it.
func TestSummarizeNoHealthAndUntil(t *testing.T) {
	gvk := schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"}
	in := 2 * time.Second
	for _, tc := range []struct {
		name        string
		results     []health.Result
		state       health.State
		unhealthy   []string
		recheckFrom time.Duration // RecheckAfter within [recheckFrom, recheckFrom+untilMargin]; 0: none
	}{
		{"only objects without health", []health.Result{{State: health.NoHealth, Message: "no health information (no status): present"}, {State: health.NoHealth}},
			health.Healthy, nil, 0},
		{"no health beside healthy", []health.Result{{State: health.Healthy, Message: "exists"}, {State: health.NoHealth}},
			health.Healthy, nil, 0},
		{"no health beside progressing", []health.Result{{State: health.NoHealth}, {State: health.Progressing, Message: "1 of 2 replicas ready"}},
			health.Progressing, []string{"Deployment shop/d01: Progressing: 1 of 2 replicas ready"}, 0},
		{"a deadline in 2s", []health.Result{{State: health.Progressing, Message: "not available", Until: time.Now().Add(in)}},
			health.Progressing, []string{"Deployment shop/d00: Progressing: not available"}, in - 100*time.Millisecond},
		{"a window over already", []health.Result{{State: health.Degraded, Message: "restarted", Until: time.Now().Add(-time.Second)}},
			health.Degraded, []string{"Deployment shop/d00: Degraded: restarted"}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fx := cacheFixture{live: map[string]*unstructured.Unstructured{}, health: map[string]health.Result{}}
			var objs []*unstructured.Unstructured
			for i, r := range tc.results {
				name := fmt.Sprintf("d%02d", i)
				objs = append(objs, deploy(name, "", "", 0))
				fx.health[fixtureKey(gvk, "shop", name)] = r
			}
			sum := (&HealthTracker{Source: fx, Live: fx}).Summarize(context.Background(), &v1alpha1.Guard{}, snapshotOf(t, objs...))
			if sum.State != tc.state || sum.Count != len(tc.unhealthy) || fmt.Sprint(sum.Unhealthy) != fmt.Sprint(tc.unhealthy) {
				t.Errorf("summary %+v; want %s, unhealthy %q", sum, tc.state, tc.unhealthy)
			}
			switch {
			case tc.recheckFrom == 0 && tc.name != "a window over already" && sum.RecheckAfter != 0:
				t.Errorf("RecheckAfter = %s, want none", sum.RecheckAfter)
			case tc.recheckFrom > 0 && (sum.RecheckAfter < tc.recheckFrom || sum.RecheckAfter > in+untilMargin):
				t.Errorf("RecheckAfter = %s, want about %s", sum.RecheckAfter, in+untilMargin)
			case tc.name == "a window over already" && sum.RecheckAfter != untilMargin:
				t.Errorf("RecheckAfter = %s, want %s (at once)", sum.RecheckAfter, untilMargin)
			}
		})
	}
}

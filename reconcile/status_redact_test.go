package reconcile

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"

	"github.com/driftguard/driftguard/api/v1alpha1"
)

// TestConditionsRedactURLs: a condition quoting an error that quotes a URL
// with credentials shows the URL without them.
func TestConditionsRedactURLs(t *testing.T) {
	const msg = `fetch https://deploy:SECRET@git.example/infra.git: Get "https://ghp_SECRET@git.example/infra.git/info/refs?access_token=SECRET": connection refused`
	const want = `fetch https://git.example/infra.git: Get "https://git.example/infra.git/info/refs?access_token=REDACTED": connection refused`
	r := &GuardReconciler{}
	for name, set := range map[string]func(g *v1alpha1.Guard){
		"stalled":   func(g *v1alpha1.Guard) { r.stalled(g, v1alpha1.ReasonFetchFailed, msg) },
		"not ready": func(g *v1alpha1.Guard) { r.notReady(g, v1alpha1.ReasonFetchFailed, msg) },
	} {
		t.Run(name, func(t *testing.T) {
			g := &v1alpha1.Guard{}
			set(g)
			for _, c := range g.Status.Conditions {
				if strings.Contains(c.Message, "SECRET") {
					t.Fatalf("condition %s holds a credential: %s", c.Type, c.Message)
				}
			}
			if c := meta.FindStatusCondition(g.Status.Conditions, v1alpha1.ConditionReady); c == nil || c.Message != want {
				t.Fatalf("Ready condition %+v, want message %s", c, want)
			}
		})
	}
}

package compiled

import (
	"strings"
	"testing"
)

// The API server refuses a match condition that names a variable: the
// conditions that keep admitted requests from the validation bind their
// values themselves.
func TestMatchConditionsNameNoVariable(t *testing.T) {
	shapes := []Shape{
		{Paths: [][]string{{"data", "tuned"}}},
		{Paths: [][]string{{"spec", "replicas"}, {"metadata", "labels", "team"}}, Defer: []string{"hpa"}},
	}
	for _, tc := range []struct {
		name   string
		shapes []Shape
	}{{"no shapes", nil}, {"shapes", shapes}} {
		t.Run(tc.name, func(t *testing.T) {
			c := Config{Name: "dg", Namespace: "dg-system", GuardUsers: []string{"dg"}, BreakGlassGroups: []string{"sre"}, Shapes: tc.shapes,
				Resources: []Resource{
					{Resource: "configmaps", Namespaced: true, Mode: "deny"},
					{Group: "apps", Resource: "deployments", Namespaced: true, Mode: "warn"},
					{Group: "rbac.authorization.k8s.io", Resource: "clusterroles", Mode: "deny"},
				}}
			policies, _ := c.Policies()
			refusing := 0
			for _, p := range policies {
				for _, mc := range p.Spec.MatchConditions {
					if strings.Contains(mc.Expression, "variables.") {
						t.Errorf("policy %s, match condition %s names a variable: %s", p.Name, mc.Name, mc.Expression)
					}
					if mc.Name == "refused" {
						refusing++
					}
				}
			}
			if want := 5; refusing != want { // deny, deny-cluster, deny-scale, warn, warn-scale
				t.Errorf("%d policies with a refused condition, want %d", refusing, want)
			}
			mp, _ := c.StampPolicy()
			for _, mc := range mp.Spec.MatchConditions {
				if strings.Contains(mc.Expression, "variables.") {
					t.Errorf("stamp condition %s names a variable", mc.Name)
				}
			}
		})
	}
}

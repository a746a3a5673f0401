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
			if want := 6; refusing != want { // deny, deny-cluster, deny-scale, deny-cluster-scale, warn, warn-scale
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

// A scale write of a cluster-scoped object (a custom resource with a scale
// subresource) is decided as a namespaced one's, by the cluster index.
func TestClusterScopedScale(t *testing.T) {
	c := Config{Name: "dg", Namespace: "dg-system", GuardUsers: []string{"dg"},
		Resources: []Resource{{Group: "example.com", Resource: "widgets", Mode: "deny"}}}
	policies, bindings := c.Policies()
	for i, p := range policies {
		if p.Name != "dg-deny-cluster-scale" {
			continue
		}
		rules := p.Spec.MatchConstraints.ResourceRules
		if len(rules) != 1 || strings.Join(rules[0].Resources, ",") != "widgets/scale" || len(rules[0].Operations) != 1 || rules[0].Operations[0] != "UPDATE" {
			t.Errorf("rules %+v, want UPDATE of widgets/scale", rules)
		}
		if p.Spec.MatchConstraints.ObjectSelector != nil {
			t.Error("an object selector on a scale policy: a Scale has no labels")
		}
		if ref := bindings[i].Spec.ParamRef; ref == nil || ref.Name != c.ClusterIndexName() || ref.Namespace != c.Namespace {
			t.Errorf("bound to %+v, want the cluster index", ref)
		}
		return
	}
	t.Error("no policy decides scale writes of a cluster-scoped resource")
}

package compiled

import (
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/driftguard/driftguard/api/v1alpha1"
	"github.com/driftguard/driftguard/apply"
)

// StampPolicy is the MutatingAdmissionPolicy that writes, on every update
// of a managed object but the guard's, who made it
// (v1alpha1.APIServerChangedByAnnotation, from request.userInfo, which no
// writer chooses): while it is in force the annotation always names the
// last writer, so a change admitted while the guard was down (break-glass,
// a controller) is attributed when the guard is back. It never fails a
// write.
func (c Config) StampPolicy() (*admissionregistrationv1.MutatingAdmissionPolicy, *admissionregistrationv1.MutatingAdmissionPolicyBinding) {
	name := c.Name + "-stamp"
	var rules []admissionregistrationv1.NamedRuleWithOperations
	for _, cluster := range []bool{false, true} {
		for _, r := range c.rules(policyKind{cluster: cluster}) {
			r.Operations = []admissionregistrationv1.OperationType{admissionregistrationv1.Update}
			rules = append(rules, r)
		}
	}
	p := &admissionregistrationv1.MutatingAdmissionPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: c.labels()},
		Spec: admissionregistrationv1.MutatingAdmissionPolicySpec{
			MatchConstraints: &admissionregistrationv1.MatchResources{
				ResourceRules:  rules,
				MatchPolicy:    ptr.To(admissionregistrationv1.Equivalent),
				ObjectSelector: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: apply.GuardLabel, Operator: metav1.LabelSelectorOpExists}}},
			},
			FailurePolicy: ptr.To(admissionregistrationv1.Ignore),
			MatchConditions: []admissionregistrationv1.MatchCondition{{
				// Not the guard, and a stamp that does not name the writer
				// yet (the object's own, as the request would store it): a
				// patch of the object costs the API server more than this
				// check. One condition: the API server evaluates every
				// condition of a policy before it looks at their results.
				Name:       "not-stamped-yet",
				Expression: c.notTheGuard().Expression + ` && object.metadata.?annotations[?` + lit(v1alpha1.APIServerChangedByAnnotation) + `].orValue("") != request.userInfo.username`,
			}},
			ReinvocationPolicy: admissionregistrationv1.NeverReinvocationPolicy,
			// A JSON patch, not an apply configuration: the API server
			// merges an apply configuration into the object through the
			// kind's schema (a type converter, the structured merge), several
			// times the CPU of the one add (docs/performance.md).
			Mutations: []admissionregistrationv1.Mutation{{
				PatchType: admissionregistrationv1.PatchTypeJSONPatch,
				JSONPatch: &admissionregistrationv1.JSONPatch{Expression: stampPatch},
			}},
		},
	}
	b := &admissionregistrationv1.MutatingAdmissionPolicyBinding{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: c.labels()},
		Spec: admissionregistrationv1.MutatingAdmissionPolicyBindingSpec{
			PolicyName:     name,
			MatchResources: &admissionregistrationv1.MatchResources{NamespaceSelector: c.namespaceSelector()},
		},
	}
	return p, b
}

// stampPatch adds the writer's name under the stamp annotation, or the
// annotations with it when the object has none.
var stampPatch = `has(object.metadata.annotations) ? [JSONPatch{op: "add", path: "/metadata/annotations/" + jsonpatch.escapeKey(` + lit(v1alpha1.APIServerChangedByAnnotation) + `), value: request.userInfo.username}] : [JSONPatch{op: "add", path: "/metadata/annotations", value: {` + lit(v1alpha1.APIServerChangedByAnnotation) + `: request.userInfo.username}}]`

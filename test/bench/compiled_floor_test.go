package bench

import (
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/driftguard/driftguard/apply"
)

// floorPolicies are the least any compiled layer of this kind costs an
// update: a validating policy with a ConfigMap parameter and a mutating
// policy, matched as the guard's are (the same resource, the guard label's
// object selector, the bindings' namespace selector), whose match
// conditions read one field of the request and are false for every update
// but a dry run of the probe objects (the validating one refuses a dry run
// of probeDeny, the mutating one stamps one of probeStamp, so the benchmark
// sees both in force). The difference between the compiled policies and
// these is what the guard's own expressions cost.
func floorPolicies(ns, param, probeDeny, probeStamp string, nsSelector *metav1.LabelSelector) (*admissionregistrationv1.ValidatingAdmissionPolicy, *admissionregistrationv1.ValidatingAdmissionPolicyBinding, *admissionregistrationv1.MutatingAdmissionPolicy, *admissionregistrationv1.MutatingAdmissionPolicyBinding, *corev1.ConfigMap) {
	const name = "bench-floor"
	match := func(op admissionregistrationv1.OperationType) *admissionregistrationv1.MatchResources {
		return &admissionregistrationv1.MatchResources{
			ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{{RuleWithOperations: admissionregistrationv1.RuleWithOperations{
				Operations: []admissionregistrationv1.OperationType{op},
				Rule:       admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"*"}, Resources: []string{"configmaps"}},
			}}},
			MatchPolicy:    ptr.To(admissionregistrationv1.Equivalent),
			ObjectSelector: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: apply.GuardLabel, Operator: metav1.LabelSelectorOpExists}}},
		}
	}
	vap := &admissionregistrationv1.ValidatingAdmissionPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
			ParamKind:        &admissionregistrationv1.ParamKind{APIVersion: "v1", Kind: "ConfigMap"},
			MatchConstraints: match(admissionregistrationv1.Update),
			FailurePolicy:    ptr.To(admissionregistrationv1.Fail),
			MatchConditions:  []admissionregistrationv1.MatchCondition{{Name: "probe", Expression: `request.dryRun == true && request.name == "` + probeDeny + `"`}},
			Validations:      []admissionregistrationv1.Validation{{Expression: "false", Message: "the floor's probe"}},
		},
	}
	vapb := &admissionregistrationv1.ValidatingAdmissionPolicyBinding{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{
			PolicyName:        name,
			ParamRef:          &admissionregistrationv1.ParamRef{Name: param, ParameterNotFoundAction: ptr.To(admissionregistrationv1.DenyAction)},
			ValidationActions: []admissionregistrationv1.ValidationAction{admissionregistrationv1.Deny, admissionregistrationv1.Audit},
			MatchResources:    &admissionregistrationv1.MatchResources{NamespaceSelector: nsSelector},
		},
	}
	mapol := &admissionregistrationv1.MutatingAdmissionPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: admissionregistrationv1.MutatingAdmissionPolicySpec{
			MatchConstraints:   match(admissionregistrationv1.Update),
			FailurePolicy:      ptr.To(admissionregistrationv1.Ignore),
			MatchConditions:    []admissionregistrationv1.MatchCondition{{Name: "probe", Expression: `request.dryRun == true && request.name == "` + probeStamp + `"`}},
			ReinvocationPolicy: admissionregistrationv1.NeverReinvocationPolicy,
			Mutations: []admissionregistrationv1.Mutation{{
				PatchType: admissionregistrationv1.PatchTypeJSONPatch,
				JSONPatch: &admissionregistrationv1.JSONPatch{Expression: `[JSONPatch{op: "add", path: "/metadata/labels/bench-floor", value: "stamped"}]`},
			}},
		},
	}
	mapb := &admissionregistrationv1.MutatingAdmissionPolicyBinding{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: admissionregistrationv1.MutatingAdmissionPolicyBindingSpec{
			PolicyName:     name,
			MatchResources: &admissionregistrationv1.MatchResources{NamespaceSelector: nsSelector},
		},
	}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: param, Namespace: ns}, Data: map[string]string{"floor": "1"}}
	return vap, vapb, mapol, mapb, cm
}

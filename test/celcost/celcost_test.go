// Package celcost evaluates the compiled layer's match conditions with the
// API server's own CEL environment and matcher (k8s.io/apiserver v0.37.2):
// that an admitted update is admitted and a refused one refused, and what
// each costs beside the floor (a match condition reading one field of the
// request), per evaluation.
package celcost

import (
	"context"
	"errors"
	"fmt"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/admission"
	plugincel "k8s.io/apiserver/pkg/admission/plugin/cel"
	"k8s.io/apiserver/pkg/admission/plugin/webhook/matchconditions"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/cel/environment"

	"github.com/driftguard/driftguard/api/v1alpha1"
	"github.com/driftguard/driftguard/apply"
	"github.com/driftguard/driftguard/compiled"
)

// param is how the API server hands a ConfigMap parameter to CEL: its
// informer's objects carry no TypeMeta, so the validating plugin wraps
// them (validating.wrappedParam) in a type converted whole to unstructured
// on every activation.
type param struct {
	metav1.TypeMeta
	nested runtime.Object
}

func (p *param) GetObjectKind() schema.ObjectKind { return p }
func (p *param) DeepCopyObject() runtime.Object   { return p }
func (p *param) MarshalJSON() ([]byte, error)     { return nil, errors.New("unused") }
func (p *param) ToUnstructured() any {
	out, err := runtime.DefaultUnstructuredConverter.ToUnstructured(p.nested)
	if err != nil {
		return nil
	}
	out["apiVersion"], out["kind"] = p.APIVersion, p.Kind
	return out
}

// setup is a namespace of 200 managed ConfigMaps, one Guard with an ignore
// rule for data.tuned, as BenchmarkCompiledAdmission has it.
type setup struct {
	config compiled.Config
	param  *param
	old    *corev1.ConfigMap
}

func newSetup() setup {
	shape := compiled.Shape{Paths: [][]string{{"data", "tuned"}}}
	c := compiled.Config{Name: "driftguard", Namespace: "driftguard-system",
		GuardUsers: []string{"system:serviceaccount:driftguard-system:driftguard"}, GuardUserPrefixes: []string{"system:serviceaccount:driftguard-system:"},
		BreakGlassGroups: []string{"sre"},
		Resources:        []compiled.Resource{{Resource: "configmaps", Namespaced: true, Mode: "deny"}},
		Shapes:           []compiled.Shape{shape}}
	entries := map[string]string{"guard.shop": "0123456789abcdef0123456789abcdef01234567|https://git.example/shop.git"}
	for i := range 200 {
		entries[compiled.Key("", "configmaps", fmt.Sprintf("cm-%04d", i))] = fmt.Sprintf("deny|%s|shop|cms.yaml:%d", shape.ID(), i*8+1)
	}
	index := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: c.IndexName(), Namespace: "shop"}, Data: compiled.PackEntries(entries)}
	old := &corev1.ConfigMap{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
		ObjectMeta: metav1.ObjectMeta{Name: "cm-0007", Namespace: "shop", ResourceVersion: "100",
			Labels:      map[string]string{apply.GuardLabel: "shop"},
			Annotations: map[string]string{v1alpha1.APIServerChangedByAnnotation: "alice"}},
		Data: map[string]string{"value": "git", "tuned": "git"}}
	return setup{config: c, param: &param{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"}, nested: index}, old: old}
}

func matcher(t testing.TB, conditions []admissionregistrationv1.MatchCondition) matchconditions.Matcher {
	compiler, err := plugincel.NewCompositedCompiler(environment.MustBaseEnvSet(environment.DefaultCompatibilityVersion()))
	if err != nil {
		t.Fatal(err)
	}
	accessors := make([]plugincel.ExpressionAccessor, len(conditions))
	for i := range conditions {
		accessors[i] = (*matchconditions.MatchCondition)(&conditions[i])
	}
	eval := compiler.CompileCondition(accessors, plugincel.OptionalVariableDeclarations{HasParams: true, HasAuthorizer: true}, environment.StoredExpressions)
	if errs := eval.CompilationErrors(); len(errs) > 0 {
		t.Fatal(errs)
	}
	fail := admissionregistrationv1.Fail
	return matchconditions.NewMatcher(eval, &fail, "policy", "validate", "celcost")
}

var alice = &user.DefaultInfo{Name: "alice", Groups: []string{"dev", "system:authenticated"}}

// match evaluates m for alice's update of old to obj.
func (s setup) match(t testing.TB, m matchconditions.Matcher, obj *corev1.ConfigMap, p runtime.Object) bool {
	return s.matchAs(t, m, alice, obj, p)
}

// matchAs evaluates m for who's update of old to obj.
func (s setup) matchAs(t testing.TB, m matchconditions.Matcher, who user.Info, obj *corev1.ConfigMap, p runtime.Object) bool {
	gvr := schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
	gvk := schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}
	attr := admission.NewAttributesRecord(obj, s.old, gvk, obj.Namespace, obj.Name, gvr, "", admission.Update, &metav1.UpdateOptions{}, false, who)
	va := &admission.VersionedAttributes{Attributes: attr, VersionedOldObject: admission.NewLazyObject(s.old), VersionedObject: admission.NewLazyObject(obj), VersionedKind: gvk}
	r := m.Match(context.Background(), va, p, nil)
	if r.Error != nil {
		t.Fatal(r.Error)
	}
	return r.Matches
}

func (s setup) edit(key, value string) *corev1.ConfigMap {
	obj := s.old.DeepCopy()
	obj.Data[key] = value
	return obj
}

// floor is a match condition that reads one field of the request.
var floor = []admissionregistrationv1.MatchCondition{{Name: "floor", Expression: `request.dryRun == true && request.name == "probe"`}}

func TestRefusedCondition(t *testing.T) {
	s := newSetup()
	ps, _ := s.config.Policies()
	m := matcher(t, ps[0].Spec.MatchConditions)
	if s.match(t, m, s.edit("tuned", "edited"), s.param) {
		t.Error("an update of an ignored field is refused")
	}
	if !s.match(t, m, s.edit("value", "edited"), s.param) {
		t.Error("an update of a field from Git is admitted")
	}
	other := s.edit("value", "edited")
	other.Name = "cm-9999"
	if s.match(t, m, other, s.param) {
		t.Error("an update of an object the index lacks is refused")
	}
	breakGlass := s.edit("value", "edited")
	breakGlass.Annotations[v1alpha1.BreakGlassAnnotation] = "incident 42"
	blankReason := s.edit("value", "edited")
	blankReason.Annotations[v1alpha1.BreakGlassAnnotation] = " \t "
	for _, c := range []struct {
		name    string
		who     user.Info
		obj     *corev1.ConfigMap
		refused bool
	}{
		{"the controller manager", &user.DefaultInfo{Name: "system:kube-controller-manager"}, s.edit("value", "edited"), false},
		{"the guard", &user.DefaultInfo{Name: "system:serviceaccount:driftguard-system:driftguard"}, s.edit("value", "edited"), false},
		{"a name that only starts like a system one", &user.DefaultInfo{Name: "system:node:"}, s.edit("value", "edited"), true},
		{"break-glass by the group", &user.DefaultInfo{Name: "bob", Groups: []string{"sre"}}, breakGlass, false},
		{"break-glass outside the group", alice, breakGlass, true},
		{"break-glass with a blank reason", &user.DefaultInfo{Name: "bob", Groups: []string{"sre"}}, blankReason, true},
	} {
		if got := s.matchAs(t, m, c.who, c.obj, s.param); got != c.refused {
			t.Errorf("%s: refused %v, want %v", c.name, got, c.refused)
		}
	}
}

// TestRefusedConditionHiddenMetadata: a shape whose ignore rules hide a
// label and an annotation compares the others key by key.
func TestRefusedConditionHiddenMetadata(t *testing.T) {
	s := newSetup()
	// A path below a label's value (a string) hides nothing: drift.Edits
	// compares the label whole, and so must the policy.
	shape := compiled.Shape{Paths: [][]string{{"metadata", "labels", "team"}, {"metadata", "annotations", "note"}, {"metadata", "labels", "app", "x"}}}
	s.config.Shapes = []compiled.Shape{shape}
	index := s.param.nested.(*corev1.ConfigMap)
	entries := map[string]string{compiled.Key("", "configmaps", "cm-0007"): "deny|" + shape.ID() + "|shop|cms.yaml:57"}
	index.Data = compiled.PackEntries(entries)
	ps, _ := s.config.Policies()
	m := matcher(t, ps[0].Spec.MatchConditions)
	for _, c := range []struct {
		name    string
		edit    func(*corev1.ConfigMap)
		refused bool
	}{
		{"hidden label", func(o *corev1.ConfigMap) { o.Labels["team"] = "a" }, false},
		{"hidden annotation", func(o *corev1.ConfigMap) { o.Annotations["note"] = "a" }, false},
		{"the guard's own annotation", func(o *corev1.ConfigMap) { o.Annotations["driftguard.io/anything"] = "a" }, false},
		{"another label", func(o *corev1.ConfigMap) { o.Labels["app"] = "a" }, true},
		{"another annotation", func(o *corev1.ConfigMap) { o.Annotations["other"] = "a" }, true},
		{"a label removed", func(o *corev1.ConfigMap) { delete(o.Labels, apply.GuardLabel) }, true},
		{"a field from Git", func(o *corev1.ConfigMap) { o.Data["value"] = "a" }, true},
	} {
		obj := s.old.DeepCopy()
		c.edit(obj)
		if got := s.match(t, m, obj, s.param); got != c.refused {
			t.Errorf("%s: refused %v, want %v", c.name, got, c.refused)
		}
	}
}

// BenchmarkAdmittedUpdate is what alice's update of an ignored field costs
// per policy: the floor's match condition, the validating policy's
// `refused` and the stamp's condition, each with the index parameter.
func BenchmarkAdmittedUpdate(b *testing.B) {
	s := newSetup()
	ps, _ := s.config.Policies()
	stamp, _ := s.config.StampPolicy()
	obj := s.edit("tuned", "edited")
	for _, c := range []struct {
		name       string
		conditions []admissionregistrationv1.MatchCondition
		param      runtime.Object
	}{{"floor", floor, s.param}, {"refused", ps[0].Spec.MatchConditions, s.param}, {"stamp", stamp.Spec.MatchConditions, nil}} {
		b.Run(c.name, func(b *testing.B) {
			m := matcher(b, c.conditions)
			for b.Loop() {
				if s.match(b, m, obj, c.param) && c.name == "refused" {
					b.Fatal("refused")
				}
			}
		})
	}
}

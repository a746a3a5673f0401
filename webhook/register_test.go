package webhook

import (
	"reflect"
	"strings"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
)

func TestConfigurationRules(t *testing.T) {
	reg := Registration{Name: "dg", URL: "https://127.0.0.1:9443", LabelKey: "driftguard.io/guard", ExcludeNamespaces: []string{"kube-system"},
		FailurePolicy: admissionregistrationv1.Fail,
		Resources: []Resource{
			{Group: "apps", Resource: "deployments"}, {Group: "", Resource: "configmaps"},
			{Group: "apps", Resource: "statefulsets"}, {Group: "", Resource: "configmaps"},
		}}
	cfg := reg.Configuration()
	byName := map[string]admissionregistrationv1.ValidatingWebhook{}
	for _, w := range cfg.Webhooks {
		byName[w.Name] = w
	}
	m := reg.MutatingConfiguration().Webhooks[0]
	if m.ReinvocationPolicy == nil || *m.ReinvocationPolicy != admissionregistrationv1.IfNeededReinvocationPolicy {
		t.Errorf("mutating webhook is not called again after later mutations: %v", m.ReinvocationPolicy)
	}
	byName["mutating "+m.Name] = admissionregistrationv1.ValidatingWebhook{Name: m.Name, Rules: m.Rules, FailurePolicy: m.FailurePolicy,
		NamespaceSelector: m.NamespaceSelector, ObjectSelector: m.ObjectSelector}
	tests := []struct {
		hook      string
		groups    [][]string
		resources [][]string
		ops       []admissionregistrationv1.OperationType
		failure   admissionregistrationv1.FailurePolicyType
		selector  string // operator on the label
	}{
		{"mutating objects.driftguard.io", [][]string{{""}, {"apps"}}, [][]string{{"configmaps"}, {"deployments", "statefulsets"}},
			[]admissionregistrationv1.OperationType{"CREATE", "UPDATE"}, admissionregistrationv1.Fail, "Exists"},
		{"objects.driftguard.io", [][]string{{""}, {"apps"}}, [][]string{{"configmaps"}, {"deployments", "statefulsets"}},
			[]admissionregistrationv1.OperationType{"DELETE"}, admissionregistrationv1.Fail, "Exists"},
		{"scale.driftguard.io", [][]string{{""}, {"apps"}}, [][]string{{"configmaps/scale"}, {"deployments/scale", "statefulsets/scale"}},
			[]admissionregistrationv1.OperationType{"UPDATE"}, admissionregistrationv1.Fail, ""},
		{"orphans.driftguard.io", [][]string{{""}, {"apps"}}, [][]string{{"configmaps"}, {"deployments", "statefulsets"}},
			[]admissionregistrationv1.OperationType{"CREATE"}, admissionregistrationv1.Ignore, "DoesNotExist"},
	}
	for _, tt := range tests {
		t.Run(tt.hook, func(t *testing.T) {
			w, ok := byName[tt.hook]
			if !ok {
				t.Fatalf("no webhook %s", tt.hook)
			}
			var groups, resources [][]string
			for _, r := range w.Rules {
				groups = append(groups, r.APIGroups)
				resources = append(resources, r.Resources)
				if !reflect.DeepEqual(r.Operations, tt.ops) {
					t.Errorf("operations %v, want %v", r.Operations, tt.ops)
				}
			}
			if !reflect.DeepEqual(groups, tt.groups) || !reflect.DeepEqual(resources, tt.resources) {
				t.Errorf("rules %v %v, want %v %v", groups, resources, tt.groups, tt.resources)
			}
			if *w.FailurePolicy != tt.failure {
				t.Errorf("failure policy %s, want %s", *w.FailurePolicy, tt.failure)
			}
			var op string
			if len(w.ObjectSelector.MatchExpressions) > 0 {
				op = string(w.ObjectSelector.MatchExpressions[0].Operator)
			}
			if op != tt.selector {
				t.Errorf("object selector operator %q, want %q", op, tt.selector)
			}
			if ns := w.NamespaceSelector.MatchExpressions; len(ns) != 1 || ns[0].Values[0] != "kube-system" {
				t.Errorf("namespace selector %+v", w.NamespaceSelector)
			}
		})
	}
	if none := (Registration{Name: "dg"}).Configuration(); len(none.Webhooks[0].Rules) != 0 {
		t.Errorf("no resources must give no rules: %+v", none.Webhooks[0].Rules)
	}
}

func TestSkipUsers(t *testing.T) {
	reg := Registration{Name: "dg", URL: "https://127.0.0.1:9443", LabelKey: "driftguard.io/guard",
		Resources: []Resource{{Group: "", Resource: "configmaps"}}}
	autoscaler := admissionregistrationv1.MatchCondition{Name: "not-the-autoscaler",
		Expression: `!(request.userInfo.username in ["system:serviceaccount:kube-system:horizontal-pod-autoscaler", "system:kube-controller-manager"])`}
	for _, w := range reg.Configuration().Webhooks {
		want := 0
		if w.Name == "scale.driftguard.io" {
			want = 1 // the autoscaler never waits on the guard
		}
		if len(w.MatchConditions) != want {
			t.Fatalf("%s: match conditions without SkipUsers: %+v", w.Name, w.MatchConditions)
		}
	}
	reg.SkipUsers = []string{"system:serviceaccount:driftguard-system:driftguard"}
	self := admissionregistrationv1.MatchCondition{Name: "not-driftguard-itself",
		Expression: `!(request.userInfo.username in ["system:serviceaccount:driftguard-system:driftguard"])`}
	want := []admissionregistrationv1.MatchCondition{self}
	for _, w := range reg.Configuration().Webhooks {
		want := want
		if w.Name == "scale.driftguard.io" {
			want = []admissionregistrationv1.MatchCondition{self, autoscaler}
		}
		if !reflect.DeepEqual(w.MatchConditions, want) {
			t.Errorf("%s: match conditions %+v, want %+v", w.Name, w.MatchConditions, want)
		}
	}
	if got := reg.MutatingConfiguration().Webhooks[0].MatchConditions; !reflect.DeepEqual(got, want) {
		t.Errorf("mutating: match conditions %+v, want %+v", got, want)
	}
}

// TestPodSubresources: with pods among the managed resources, a pod's
// ephemeral containers and resize go to the webhook, selected by the label.
func TestPodSubresources(t *testing.T) {
	reg := Registration{Name: "dg", URL: "https://127.0.0.1:9443", LabelKey: "driftguard.io/guard",
		Resources: []Resource{{Group: "", Resource: "configmaps"}}}
	for _, w := range reg.Configuration().Webhooks {
		if w.Name == "subresources.driftguard.io" && len(w.Rules) != 0 {
			t.Fatalf("pod subresources registered without managed pods: %+v", w.Rules)
		}
	}
	reg.Resources = append(reg.Resources, Resource{Group: "", Resource: "pods"})
	var found bool
	for _, w := range reg.Configuration().Webhooks {
		if w.Name != "subresources.driftguard.io" {
			continue
		}
		found = true
		var names []string
		for _, r := range w.Rules {
			names = append(names, r.Resources...)
		}
		if !reflect.DeepEqual(names, []string{"pods/ephemeralcontainers", "pods/resize"}) || w.ObjectSelector.MatchExpressions[0].Key != "driftguard.io/guard" {
			t.Fatalf("rules %v selector %+v", names, w.ObjectSelector)
		}
	}
	if !found {
		t.Fatal("no webhook for pod subresources")
	}
	// An eviction's object is an Eviction, with no labels: not selected.
	found = false
	for _, w := range reg.Configuration().Webhooks {
		if w.Name != "evictions.driftguard.io" {
			continue
		}
		found = true
		if len(w.Rules) != 1 || !reflect.DeepEqual(w.Rules[0].Resources, []string{"pods/eviction"}) || w.Rules[0].Operations[0] != admissionregistrationv1.Create || len(w.ObjectSelector.MatchExpressions) != 0 || *w.FailurePolicy != admissionregistrationv1.Ignore {
			t.Fatalf("eviction rules %+v selector %+v", w.Rules, w.ObjectSelector)
		}
	}
	if !found {
		t.Fatal("no webhook for evictions")
	}
}

// TestSkipUserPrefixes: the service accounts of the guard's namespace,
// which Guards' writes impersonate, are left out like the guard itself.
func TestSkipUserPrefixes(t *testing.T) {
	for _, tc := range []struct {
		name     string
		users    []string
		prefixes []string
		want     string // "" for no condition
	}{
		{name: "none"},
		{name: "users only", users: []string{"dg"}, want: `!(request.userInfo.username in ["dg"])`},
		{name: "prefix only", prefixes: []string{"system:serviceaccount:driftguard-system:"},
			want: `!(request.userInfo.username.startsWith("system:serviceaccount:driftguard-system:"))`},
		{name: "both", users: []string{"dg", "other"}, prefixes: []string{"system:serviceaccount:dg:"},
			want: `!(request.userInfo.username in ["dg", "other"] || request.userInfo.username.startsWith("system:serviceaccount:dg:"))`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			reg := Registration{Name: "dg", SkipUsers: tc.users, SkipUserPrefixes: tc.prefixes}
			got := reg.matchConditions()
			if tc.want == "" {
				if len(got) != 0 {
					t.Fatalf("conditions %+v, want none", got)
				}
				return
			}
			if len(got) != 1 || got[0].Name != "not-driftguard-itself" || got[0].Expression != tc.want {
				t.Fatalf("conditions %+v, want one named not-driftguard-itself: %s", got, tc.want)
			}
		})
	}
}

// With DecideInMutating (--admission-mode=both) deletes and scale writes go
// to the mutating configuration, which the API server calls before its
// admission policies; the validating one keeps orphans and pod subresources.
func TestDecideInMutating(t *testing.T) {
	r := Registration{Name: "dg", URL: "https://127.0.0.1:9443", LabelKey: "driftguard.io/guard",
		Resources: []Resource{{Group: "", Resource: "configmaps"}, {Group: "apps", Resource: "deployments"}}, DecideInMutating: true}
	var validating, mutating []string
	for _, w := range r.Configuration().Webhooks {
		validating = append(validating, w.Name)
	}
	for _, w := range r.MutatingConfiguration().Webhooks {
		mutating = append(mutating, w.Name)
		if w.Name == "scale.driftguard.io" && len(w.MatchConditions) == 0 {
			t.Error("the mutating scale webhook lost the autoscaler's match condition")
		}
	}
	if got, want := strings.Join(validating, ","), "orphans.driftguard.io,subresources.driftguard.io,evictions.driftguard.io"; got != want {
		t.Errorf("validating webhooks %s, want %s", got, want)
	}
	if got, want := strings.Join(mutating, ","), "objects.driftguard.io,deletes.driftguard.io,scale.driftguard.io"; got != want {
		t.Errorf("mutating webhooks %s, want %s", got, want)
	}
}

// With a Leftover (--admission-mode=compiled) the mutating webhooks see
// creates and what the compiled policies leave, and a hook with nothing
// left is not registered; the validating configuration keeps orphans and
// pod subresources.
func TestLeftover(t *testing.T) {
	for _, tc := range []struct {
		name     string
		left     Leftover
		hooks    string
		contains map[string]string // hook: text its condition holds
	}{
		{"nothing left", Leftover{}, "objects.driftguard.io",
			map[string]string{"objects.driftguard.io": `request.operation == "CREATE"`}},
		{"a managedFieldsManagers user: updates and scale writes, not deletes", Leftover{Users: []string{"injector"}},
			"objects.driftguard.io,scale.driftguard.io",
			map[string]string{"objects.driftguard.io": `request.userInfo.username in ["injector"]`, "scale.driftguard.io": `"UPDATE" && request.userInfo.username in ["injector"]`}},
		{"an object: every change", Leftover{Objects: []string{"deployments.apps_shop/web"}},
			"objects.driftguard.io,deletes.driftguard.io,scale.driftguard.io",
			map[string]string{"deletes.driftguard.io": `in ["deployments.apps_shop/web"]`, "scale.driftguard.io": `"deployments.apps_shop/web"`}},
		{"too many objects: their resources", Leftover{Resources: []Resource{{Group: "apps", Resource: "deployments"}}},
			"objects.driftguard.io,deletes.driftguard.io,scale.driftguard.io",
			map[string]string{"deletes.driftguard.io": `request.resource.group in ["deployments.apps"]`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := Registration{Name: "dg", URL: "https://127.0.0.1:9443", LabelKey: "driftguard.io/guard",
				Resources: []Resource{{Group: "", Resource: "configmaps"}, {Group: "apps", Resource: "deployments"}}, Leftover: &tc.left}
			var names []string
			for _, w := range r.MutatingConfiguration().Webhooks {
				names = append(names, w.Name)
				last := w.MatchConditions[len(w.MatchConditions)-1]
				if last.Name != "left-by-the-compiled-policies" {
					t.Errorf("%s: conditions %+v", w.Name, w.MatchConditions)
				}
				if want, ok := tc.contains[w.Name]; ok && !strings.Contains(last.Expression, want) {
					t.Errorf("%s: condition %s lacks %s", w.Name, last.Expression, want)
				}
			}
			if got := strings.Join(names, ","); got != tc.hooks {
				t.Errorf("mutating webhooks %s, want %s", got, tc.hooks)
			}
			var validating []string
			for _, w := range r.Configuration().Webhooks {
				validating = append(validating, w.Name)
			}
			if got, want := strings.Join(validating, ","), "orphans.driftguard.io,subresources.driftguard.io,evictions.driftguard.io"; got != want {
				t.Errorf("validating webhooks %s, want %s", got, want)
			}
		})
	}
}

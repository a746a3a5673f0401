package main

import (
	"encoding/json"
	"strings"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"

	"github.com/driftguard/driftguard/audit"
	"github.com/driftguard/driftguard/compiled"
	"github.com/driftguard/driftguard/decision"
	"github.com/driftguard/driftguard/policy"
)

// apiServerEvent is what replay reads of the API server's audit log (an
// audit.k8s.io/v1 Event, one JSON object a line).
type apiServerEvent struct {
	APIVersion       string            `json:"apiVersion"`
	Kind             string            `json:"kind"`
	Stage            string            `json:"stage"`
	Verb             string            `json:"verb"`
	User             apiServerUser     `json:"user"`
	ImpersonatedUser *apiServerUser    `json:"impersonatedUser"`
	ObjectRef        *apiServerObject  `json:"objectRef"`
	StageTimestamp   time.Time         `json:"stageTimestamp"`
	Annotations      map[string]string `json:"annotations"`
}

type apiServerUser struct {
	Username string   `json:"username"`
	Groups   []string `json:"groups"`
}

type apiServerObject struct {
	Resource    string `json:"resource"`
	Namespace   string `json:"namespace"`
	Name        string `json:"name"`
	APIGroup    string `json:"apiGroup"`
	APIVersion  string `json:"apiVersion"`
	Subresource string `json:"subresource"`
}

// validationFailureAnnotation is where the API server's audit log has the
// failures of ValidatingAdmissionPolicies bound with the Audit action, as
// the compiled policies are.
const validationFailureAnnotation = "validation.policy.admission.k8s.io/validation_failure"

// compiledRule is the rule of the default policy the compiled policies
// decide a change of a managed object by.
const compiledRule = decision.RuleManagedByGit

// apiServerDecision reads one line of the API server's audit log that has
// a compiled policy's denial (or warning), as a decision record whose policy
// input is what the log and the policy's message tell: who, what operation
// on which object, which top-level fields it changed, and where Git has the
// object. False for every other line.
func apiServerDecision(line []byte) (audit.Record, bool) {
	var ev apiServerEvent
	if json.Unmarshal(line, &ev) != nil || ev.Kind != "Event" || !strings.HasPrefix(ev.APIVersion, "audit.k8s.io/") ||
		ev.Stage != "ResponseComplete" || ev.ObjectRef == nil || ev.Annotations[validationFailureAnnotation] == "" {
		return audit.Record{}, false
	}
	var failures []struct {
		Message string `json:"message"`
	}
	if json.Unmarshal([]byte(ev.Annotations[validationFailureAnnotation]), &failures) != nil {
		return audit.Record{}, false
	}
	for _, f := range failures {
		d, ok := compiled.ParseDenial(f.Message)
		if ok && d.Name == ev.ObjectRef.Name && d.Resource == ev.ObjectRef.Resource {
			return decisionOf(ev, d), true
		}
	}
	return audit.Record{}, false
}

func decisionOf(ev apiServerEvent, d compiled.Denial) audit.Record {
	user := ev.User
	if ev.ImpersonatedUser != nil {
		user = *ev.ImpersonatedUser
	}
	ref := ev.ObjectRef
	kind := kindOf(ref.APIGroup, ref.APIVersion, ref.Resource)
	in := policy.Input{
		Operation: "UPDATE",
		User: policy.User{Username: user.Username, Groups: user.Groups,
			ServiceAccount: strings.HasPrefix(user.Username, "system:serviceaccount:")},
		Resource:    policy.Resource{Group: ref.APIGroup, Version: ref.APIVersion, Kind: kind, Namespace: ref.Namespace, Name: ref.Name},
		SubResource: ref.Subresource,
		Drift:       []policy.Change{},
		Source:      policy.Source{URL: d.URL, Revision: d.Revision, Path: d.Path, Line: d.Line},
		Guard:       d.Guard,
	}
	switch {
	case d.Delete:
		in.Operation = "DELETE"
	case d.Scale:
		in.Drift = append(in.Drift, policy.Change{Path: "/spec/replicas", Live: d.Replicas, Old: d.OldReplicas})
	default:
		for _, f := range d.Changed {
			in.Drift = append(in.Drift, policy.Change{Path: "/" + strings.ReplaceAll(f, ".", "/")})
		}
	}
	raw, _ := json.Marshal(in) // of plain values: cannot fail
	return audit.Record{
		Time: ev.StageTimestamp, Type: audit.Decision, Guard: d.Guard, User: user.Username, Groups: user.Groups, Operation: in.Operation,
		Object: audit.Object{Group: ref.APIGroup, Version: ref.APIVersion, Kind: kind, Namespace: ref.Namespace, Name: ref.Name},
		Action: d.Mode, Rule: compiledRule, PolicyInput: raw,
	}
}

var (
	kindsOnce sync.Once
	kinds     map[schema.GroupVersionResource]string
)

// kindOf names the kind of a built-in resource; another keeps the
// resource's name (the log names no kind).
func kindOf(group, version, resource string) string {
	kindsOnce.Do(func() {
		kinds = map[schema.GroupVersionResource]string{}
		for gvk := range clientgoscheme.Scheme.AllKnownTypes() {
			plural, _ := meta.UnsafeGuessKindToResource(gvk)
			kinds[plural] = gvk.Kind
		}
	})
	if k, ok := kinds[schema.GroupVersionResource{Group: group, Version: version, Resource: resource}]; ok {
		return k
	}
	return resource
}

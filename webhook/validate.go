package webhook

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/go-logr/logr"
	admissionv1 "k8s.io/api/admission/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/driftguard/driftguard/api/v1alpha1"
	"github.com/driftguard/driftguard/audit"
	"github.com/driftguard/driftguard/drift"
	"github.com/driftguard/driftguard/gitstore"
	"github.com/driftguard/driftguard/policy"
)

// Decider is the policy asked about a change.
type Decider interface {
	Decide(ctx context.Context, in policy.Input) (policy.Decision, error)
	Revision() string
}

// Settings tells the webhook how a Guard enforces.
type Settings interface {
	// Enforcement is deny, warn or dryrun.
	Enforcement(guard string) string
	// PolicyData is the Guard's spec.policyData.
	PolicyData(guard string) map[string]string
	// GuardSpec is the Guard's spec as JSON decodes it, for the policy.
	GuardSpec(guard string) map[string]any
}

// Validator answers validating admission reviews for managed objects.
type Validator struct {
	Store    *gitstore.Store
	Policy   Decider
	Settings Settings
	// Options, when set, gives the comparison options (ignore rules) for an object.
	Options func(desired *unstructured.Unstructured, live map[string]any) drift.Options
	Mapper  meta.RESTMapper
	Audit   *audit.Logger
	// FailClosed denies a change the guard cannot decide (policy error,
	// overload); otherwise such a change is admitted with a warning.
	FailClosed bool
	// MaxInFlight bounds concurrent reviews; Deadline bounds one review and
	// must stay below the webhook timeout the API server uses.
	MaxInFlight int
	Deadline    time.Duration
	Log         logr.Logger

	sem chan struct{}
}

// maxBody bounds an AdmissionReview: an object and its old version, each at
// most what etcd stores, with room to spare.
const maxBody = 16 << 20

// ServeHTTP decodes one AdmissionReview, reviews it and writes the answer.
func (v *Validator) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	serveReview(w, r, v.Log, v.Review)
}

// Review decides one admission request.
func (v *Validator) Review(ctx context.Context, req *admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse {
	return v.review(ctx, req).resp
}

// reviewed is what review did with a request.
type reviewed struct {
	resp *admissionv1.AdmissionResponse
	// decided: the request was put to the policy (or its failure policy)
	// and the decision recorded.
	decided bool
	// object is the incoming object, when the request was decided.
	object map[string]any
}

func (v *Validator) review(ctx context.Context, req *admissionv1.AdmissionRequest) reviewed {
	if v.Deadline > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, v.Deadline)
		defer cancel()
	}
	if !v.acquire(ctx) {
		return reviewed{resp: v.undecided(req, "driftguard is overloaded")}
	}
	defer v.release()

	gvk, ok := v.managedKind(req)
	if !ok || req.Name == "" {
		return reviewed{resp: allowed()}
	}
	key := requestKey(gvk, req)
	guard, want, ok := v.Store.Lookup(key)
	if !ok {
		if req.Operation == admissionv1.Create && key.Namespace != "" && req.SubResource == "" {
			return v.reviewOrphan(ctx, req, gvk, key)
		}
		return reviewed{resp: allowed()}
	}
	incoming, changes, err := changesOf(req, want, v.Options)
	if err != nil {
		return reviewed{resp: v.undecided(req, err.Error())}
	}
	if len(changes) == 0 && req.Operation != admissionv1.Delete {
		return reviewed{resp: allowed()} // nothing Git sets would change
	}

	in := policy.Input{
		Operation:   string(req.Operation),
		User:        userOf(req),
		Resource:    policy.Resource{Group: gvk.Group, Version: want.GVK().Version, Kind: gvk.Kind, Namespace: req.Namespace, Name: req.Name},
		SubResource: req.SubResource,
		Object:      drift.RedactObject(incoming),
		Desired:     drift.RedactObject(want.Obj().Object),
		Drift:       policy.Changes(changes),
		Source:      policy.Source(want.Source),
		Annotations: annotationsOf(incoming),
		DryRun:      req.DryRun != nil && *req.DryRun,
		Guard:       guard,
	}
	if v.Settings != nil {
		in.PolicyData, in.GuardSpec = v.Settings.PolicyData(guard), v.Settings.GuardSpec(guard)
	}
	if len(req.OldObject.Raw) > 0 && req.SubResource == "" {
		if old, err := decodeObject(req.OldObject.Raw); err == nil {
			in.OldObject = drift.RedactObject(old)
		}
	}
	if req.Operation == admissionv1.Delete {
		in.Drift = []policy.Change{{Path: "", Desired: "present", Live: nil}}
	}
	d, err := v.Policy.Decide(ctx, in)
	if err != nil {
		v.Log.Error(err, "policy failed", "object", key.String())
		resp := v.undecided(req, "policy error: "+err.Error())
		// A change the failure policy decided is recorded like any other.
		v.Audit.Log(ctx, audit.Record{PolicyInput: replayInput(in),
			Type: audit.Decision, Guard: guard, User: req.UserInfo.Username, Groups: req.UserInfo.Groups,
			Operation: operationName(req), Object: audit.Object{Group: gvk.Group, Version: in.Resource.Version, Kind: gvk.Kind, Namespace: req.Namespace, Name: req.Name},
			Fields: audit.FieldsOf(changes), Action: failureAction(resp), Reason: v.failureReason(), Rule: failurePolicyRule,
			PolicyRevision: v.Policy.Revision(), Source: audit.SourceOf(want.Source),
			RequestUID: string(req.UID), DryRun: in.DryRun, Error: err.Error(),
		})
		return reviewed{resp: resp, decided: true, object: incoming}
	}
	policyAction := d.Action
	d = v.enforce(guard, want, d)
	rec := audit.Record{PolicyInput: replayInput(in),
		Type: audit.Decision, Guard: guard, User: req.UserInfo.Username, Groups: req.UserInfo.Groups,
		Operation: operationName(req), Object: audit.Object{Group: gvk.Group, Version: in.Resource.Version, Kind: gvk.Kind, Namespace: req.Namespace, Name: req.Name},
		Fields: audit.FieldsOf(changes), Action: string(d.Action), Reason: d.Reason, Rule: d.Rule,
		PolicyRevision: v.Policy.Revision(), Source: audit.SourceOf(want.Source),
		RequestUID: string(req.UID), DryRun: in.DryRun,
	}
	if policyAction != d.Action {
		rec.PolicyAction = string(policyAction)
	}
	v.Audit.Log(ctx, rec)
	out := reviewed{resp: allowed(), decided: true, object: incoming}
	switch d.Action {
	case policy.Deny:
		out.resp = denied(denialMessage(key, want, req, changes, d))
	case policy.Warn:
		out.resp.Warnings = []string{warningMessage(key, want, changes, d)}
	} // allow, and revert (the informer puts Git's state back): admitted
	return out
}

// requestKey is the store key of the object a request is about.
func requestKey(gvk schema.GroupVersionKind, req *admissionv1.AdmissionRequest) gitstore.ObjectKey {
	key := gitstore.ObjectKey{Group: gvk.Group, Kind: gvk.Kind, Namespace: req.Namespace, Name: req.Name}
	if gvk.Group == "" && gvk.Kind == "Namespace" {
		key.Namespace = "" // the API server gives a Namespace's own name as the request's namespace
	}
	return key
}

// reviewOrphan decides the CREATE of an object Git does not have in a
// namespace a Guard owns (one whose Namespace object is in Git): the policy
// sees it with orphan true and no desired object. Other creates of unknown
// objects are admitted without asking.
func (v *Validator) reviewOrphan(ctx context.Context, req *admissionv1.AdmissionRequest, gvk schema.GroupVersionKind, key gitstore.ObjectKey) reviewed {
	guard, ns, ok := v.Store.Lookup(gitstore.ObjectKey{Kind: "Namespace", Name: req.Namespace})
	if !ok {
		return reviewed{resp: allowed()}
	}
	obj, err := decodeObject(req.Object.Raw)
	if err != nil {
		return reviewed{resp: v.undecided(req, fmt.Sprintf("decode %s of %s/%s: %v", req.Kind.Kind, req.Namespace, req.Name, err))}
	}
	in := policy.Input{
		Operation: string(req.Operation),
		User:      userOf(req),
		Resource:  policy.Resource{Group: gvk.Group, Version: gvk.Version, Kind: gvk.Kind, Namespace: req.Namespace, Name: req.Name},
		Object:    drift.RedactObject(obj),
		Drift:     []policy.Change{},
		Source:    policy.Source(ns.Source),
		Orphan:    true,
		DryRun:    req.DryRun != nil && *req.DryRun,
		Guard:     guard,
	}
	in.Annotations = annotationsOf(obj)
	if v.Settings != nil {
		in.PolicyData, in.GuardSpec = v.Settings.PolicyData(guard), v.Settings.GuardSpec(guard)
	}
	d, err := v.Policy.Decide(ctx, in)
	if err != nil {
		v.Log.Error(err, "policy failed", "object", key.String())
		resp := v.undecided(req, "policy error: "+err.Error())
		v.Audit.Log(ctx, audit.Record{
			Type: audit.Decision, Guard: guard, User: req.UserInfo.Username, Groups: req.UserInfo.Groups,
			Operation: operationName(req), Object: audit.Object{Group: gvk.Group, Version: gvk.Version, Kind: gvk.Kind, Namespace: req.Namespace, Name: req.Name},
			Action: failureAction(resp), Reason: v.failureReason(), Rule: failurePolicyRule, Orphan: true, PolicyInput: replayInput(in),
			PolicyRevision: v.Policy.Revision(), Source: audit.SourceOf(ns.Source),
			RequestUID: string(req.UID), DryRun: in.DryRun, Error: err.Error(),
		})
		return reviewed{resp: resp, decided: true, object: obj}
	}
	v.Audit.Log(ctx, audit.Record{
		Type: audit.Decision, Guard: guard, User: req.UserInfo.Username, Groups: req.UserInfo.Groups,
		Operation: operationName(req), Object: audit.Object{Group: gvk.Group, Version: gvk.Version, Kind: gvk.Kind, Namespace: req.Namespace, Name: req.Name},
		Action: string(d.Action), Reason: d.Reason, Rule: d.Rule, Orphan: true, PolicyInput: replayInput(in),
		PolicyRevision: v.Policy.Revision(), Source: audit.SourceOf(ns.Source),
		RequestUID: string(req.UID), DryRun: in.DryRun,
	})
	msg := orphanMessage(key, req.Namespace, ns, d)
	out := reviewed{resp: allowed(), decided: true, object: obj}
	switch d.Action {
	case policy.Deny:
		out.resp = denied(msg)
	case policy.Warn:
		out.resp.Warnings = []string{msg}
	}
	return out
}

// replayInput is the policy input as recorded for replay: without the object
// bodies, which would make every record as large as the object.
func replayInput(in policy.Input) json.RawMessage {
	in.Object, in.OldObject, in.Desired = nil, nil, nil
	raw, err := json.Marshal(in)
	if err != nil {
		return nil // values come from JSON; a failure only loses replay
	}
	return raw
}

func userOf(req *admissionv1.AdmissionRequest) policy.User {
	return policy.User{Username: req.UserInfo.Username, UID: req.UserInfo.UID, Groups: req.UserInfo.Groups, ServiceAccount: strings.HasPrefix(req.UserInfo.Username, "system:serviceaccount:")}
}

// enforce applies the object's enforcement annotation from Git, then the
// Guard's enforcement mode, to a policy's decision.
func (v *Validator) enforce(guard string, want *gitstore.Object, d policy.Decision) policy.Decision {
	if d.Action != policy.Deny {
		return d
	}
	switch want.Obj().GetAnnotations()[v1alpha1.EnforcementAnnotation] {
	case "off":
		return policy.Decision{Action: policy.Allow, Rule: d.Rule, Reason: d.Reason + " (enforcement off for this object in Git)"}
	case "revert":
		return policy.Decision{Action: policy.Revert, Rule: d.Rule, Reason: d.Reason + " (admitted and reverted: enforcement revert in Git)"}
	case "warn":
		return policy.Decision{Action: policy.Warn, Rule: d.Rule, Reason: d.Reason + " (enforcement warn in Git)"}
	case "deny":
		return d
	}
	mode := string(v1alpha1.EnforcementDeny)
	if v.Settings != nil {
		mode = v.Settings.Enforcement(guard)
	}
	switch v1alpha1.Enforcement(mode) {
	case v1alpha1.EnforcementWarn:
		return policy.Decision{Action: policy.Warn, Rule: d.Rule, Reason: d.Reason + " (guard enforcement warn)"}
	case v1alpha1.EnforcementDryRun:
		return policy.Decision{Action: policy.Revert, Rule: d.Rule, Reason: d.Reason + " (would be denied; guard enforcement dryrun admitted it)"}
	}
	return d
}

// managedKind returns the kind of the object a request is about: the
// request's kind, or for the scale subresource the kind that owns it.
func (v *Validator) managedKind(req *admissionv1.AdmissionRequest) (schema.GroupVersionKind, bool) {
	switch req.SubResource {
	case "":
		return schema.GroupVersionKind{Group: req.Kind.Group, Version: req.Kind.Version, Kind: req.Kind.Kind}, true
	case "scale":
		gvk, err := v.Mapper.KindFor(schema.GroupVersionResource{Group: req.Resource.Group, Version: req.Resource.Version, Resource: req.Resource.Resource})
		if err != nil {
			v.Log.Info("unknown resource for scale", "resource", req.Resource.Resource, "error", err.Error())
			return gvk, false
		}
		return gvk, true
	}
	return schema.GroupVersionKind{}, false
}

// changesOf returns the incoming object and the fields Git sets that the
// request would change.
func changesOf(req *admissionv1.AdmissionRequest, want *gitstore.Object, options func(*unstructured.Unstructured, map[string]any) drift.Options) (map[string]any, []drift.Change, error) {
	raw := req.Object.Raw
	if req.Operation == admissionv1.Delete {
		raw = req.OldObject.Raw
	}
	if len(raw) == 0 {
		return nil, nil, nil
	}
	obj, err := decodeObject(raw)
	if err != nil {
		return nil, nil, fmt.Errorf("decode %s of %s/%s: %w", req.Kind.Kind, req.Namespace, req.Name, err)
	}
	if req.Operation == admissionv1.Delete {
		return obj, nil, nil
	}
	var opts drift.Options
	if options != nil && req.SubResource == "" {
		opts = options(want.Obj(), obj)
	}
	if req.SubResource == "scale" {
		if options != nil {
			opts = options(want.Obj(), nil)
		}
		return obj, scaleChanges(drift.WithoutIgnored(want.Obj().Object, opts), obj), nil
	}
	return obj, want.Drift(obj, opts), nil
}

// scaleChanges compares a Scale with the replicas Git sets (absent when an
// ignore rule hides them).
func scaleChanges(want map[string]any, scale map[string]any) []drift.Change {
	desired, found, _ := unstructuredInt(want, "spec", "replicas")
	if !found {
		return nil
	}
	live, _, _ := unstructuredInt(scale, "spec", "replicas")
	if desired == live {
		return nil
	}
	return []drift.Change{{Path: "/spec/replicas", Desired: desired, Live: live}}
}

func unstructuredInt(obj map[string]any, fields ...string) (int64, bool, error) {
	var cur any = obj
	for _, f := range fields {
		m, ok := cur.(map[string]any)
		if !ok {
			return 0, false, nil
		}
		if cur, ok = m[f]; !ok {
			return 0, false, nil
		}
	}
	switch n := cur.(type) {
	case int64:
		return n, true, nil
	case float64:
		return int64(n), true, nil
	}
	return 0, false, fmt.Errorf("%s is not a number", strings.Join(fields, "."))
}

func decodeObject(raw []byte) (map[string]any, error) {
	var obj map[string]any
	dec := json.NewDecoder(strings.NewReader(string(raw)))
	dec.UseNumber()
	if err := dec.Decode(&obj); err != nil {
		return nil, err
	}
	return drift.JSONNumbers(obj).(map[string]any), nil
}

func annotationsOf(obj map[string]any) map[string]string {
	md, _ := obj["metadata"].(map[string]any)
	ann, _ := md["annotations"].(map[string]any)
	if len(ann) == 0 {
		return nil
	}
	out := make(map[string]string, len(ann))
	for k, v := range ann {
		if s, ok := v.(string); ok {
			out[k] = s
		}
	}
	return out
}

func operationName(req *admissionv1.AdmissionRequest) string {
	if req.SubResource != "" {
		return string(req.Operation) + "/" + req.SubResource
	}
	return string(req.Operation)
}

func (v *Validator) acquire(ctx context.Context) bool {
	if v.sem == nil {
		return true
	}
	select {
	case v.sem <- struct{}{}:
		return true
	case <-ctx.Done():
		return false
	}
}

func (v *Validator) release() {
	if v.sem != nil {
		<-v.sem
	}
}

// Init prepares the concurrency bound; call once before serving.
func (v *Validator) Init() {
	if v.MaxInFlight > 0 {
		v.sem = make(chan struct{}, v.MaxInFlight)
	}
}

// undecided answers a request the guard could not decide, as configured.
func (v *Validator) undecided(req *admissionv1.AdmissionRequest, why string) *admissionv1.AdmissionResponse {
	msg := fmt.Sprintf("driftguard could not decide %s of %s %s/%s: %s", req.Operation, req.Kind.Kind, req.Namespace, req.Name, why)
	if v.FailClosed {
		return denied(msg)
	}
	r := allowed()
	r.Warnings = []string{msg + "; admitted because the failure policy is Ignore"}
	return r
}

// failurePolicyRule is the rule of a decision the failure policy made
// because the policy failed (an error, no decision, a timeout).
const failurePolicyRule = "failure-policy"

// failureAction is the recorded action of an undecided response.
func failureAction(r *admissionv1.AdmissionResponse) string {
	if r.Allowed {
		return string(policy.Allow)
	}
	return string(policy.Deny)
}

func (v *Validator) failureReason() string {
	if v.FailClosed {
		return "the policy failed; denied because the failure policy is Fail"
	}
	return "the policy failed; admitted because the failure policy is Ignore"
}

func allowed() *admissionv1.AdmissionResponse {
	return &admissionv1.AdmissionResponse{Allowed: true}
}

func denied(msg string) *admissionv1.AdmissionResponse {
	return &admissionv1.AdmissionResponse{Allowed: false, Result: &metav1.Status{
		Status: metav1.StatusFailure, Code: http.StatusForbidden, Reason: metav1.StatusReasonForbidden, Message: msg,
	}}
}

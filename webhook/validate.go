package webhook

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/go-logr/logr"
	admissionv1 "k8s.io/api/admission/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/driftguard/driftguard/audit"
	"github.com/driftguard/driftguard/decision"
	"github.com/driftguard/driftguard/drift"
	"github.com/driftguard/driftguard/policy"
	"github.com/driftguard/driftguard/redact"
	"github.com/driftguard/driftguard/render"
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

// ValidatorOptions configure a Validator. Store, Policy, Mapper and Audit
// are required.
type ValidatorOptions struct {
	Store    *render.Store
	Policy   Decider
	Settings Settings
	// Options, when set, gives the comparison options (ignore rules) for an object.
	Options func(desired *unstructured.Unstructured, live map[string]any) drift.Options
	// WriteOptions, when set, gives the ignore rules for one write by user:
	// a managedFieldsManagers rule hides the fields of its managers only
	// from the writers the rule names (drift.ForWrite).
	WriteOptions func(desired *unstructured.Unstructured, updated map[string]any, user string) drift.Options
	Mapper       meta.RESTMapper
	Audit        *audit.Logger
	// FailClosed denies a change the guard cannot decide (policy error,
	// overload); otherwise such a change is admitted with a warning.
	FailClosed bool
	// MaxInFlight bounds concurrent reviews; Deadline bounds one review and
	// must stay below the webhook timeout the API server uses.
	MaxInFlight int
	Deadline    time.Duration
	Log         logr.Logger
}

// Validator answers validating admission reviews for managed objects. Make
// it with NewValidator.
type Validator struct {
	ValidatorOptions

	sem chan struct{} // bounds reviews at once; nil: MaxInFlight is 0
}

// NewValidator returns a Validator ready to serve, or an error naming the
// required option that is missing.
func NewValidator(o ValidatorOptions) (*Validator, error) {
	switch {
	case o.Store == nil:
		return nil, errors.New("webhook validator: no Store")
	case o.Policy == nil:
		return nil, errors.New("webhook validator: no Policy")
	case o.Mapper == nil:
		return nil, errors.New("webhook validator: no Mapper")
	case o.Audit == nil:
		return nil, errors.New("webhook validator: no Audit logger")
	}
	v := &Validator{ValidatorOptions: o}
	if o.MaxInFlight > 0 {
		v.sem = make(chan struct{}, o.MaxInFlight)
	}
	return v, nil
}

// maxBody bounds an AdmissionReview a handler reads when no server's
// Limits bound it first (handlers served on their own, in tests).
const maxBody = MaxRequestBytesCeiling

// ServeHTTP decodes one AdmissionReview, reviews it and writes the answer.
func (v *Validator) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	serveReview(w, r, v.Log, v.Review)
}

// Review decides one admission request.
func (v *Validator) Review(ctx context.Context, req *admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse {
	return withoutSecrets(v.review(ctx, req).resp)
}

// withoutSecrets replaces every secret value the process knows
// (redact.Secrets) in the denial message and warnings of resp: they quote
// Git's values, the policy's reason and errors.
func withoutSecrets(resp *admissionv1.AdmissionResponse) *admissionv1.AdmissionResponse {
	if resp == nil || !redact.Secrets.Active() {
		return resp
	}
	if resp.Result != nil {
		resp.Result.Message = redact.Secrets.String(resp.Result.Message)
	}
	for i, w := range resp.Warnings {
		resp.Warnings[i] = redact.Secrets.String(w)
	}
	return resp
}

// reviewed is what review did with a request.
type reviewed struct {
	resp *admissionv1.AdmissionResponse
	// decided: the request was put to the policy (or its failure policy)
	// and the decision recorded.
	decided bool
	// object is the incoming object, when the request was decided, and
	// old the object it replaces (an update's).
	object, old map[string]any
}

func (v *Validator) review(ctx context.Context, req *admissionv1.AdmissionRequest) reviewed {
	req = evictionAsDelete(req)
	if v.Deadline > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, v.Deadline)
		defer cancel()
	}
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
	if !v.acquire(ctx) {
		return v.undecided(ctx, req, gvk, guard, want.Source, nil, nil, errors.New("driftguard is overloaded"))
	}
	defer v.release()
	incoming, old, changes, err := v.changesOf(req, want)
	if err != nil {
		return v.undecided(ctx, req, gvk, guard, want.Source, nil, nil, err)
	}
	if len(changes) == 0 && req.Operation != admissionv1.Delete {
		return reviewed{resp: allowed()} // the write changes nothing that is compared
	}

	c := decision.Change{
		Operation: string(req.Operation), User: req.UserInfo.Username, UID: req.UserInfo.UID, Groups: req.UserInfo.Groups,
		Resource:    policy.Resource{Group: gvk.Group, Version: want.GVK().Version, Kind: gvk.Kind, Namespace: req.Namespace, Name: req.Name},
		SubResource: req.SubResource,
		Object:      incoming,
		Desired:     want,
		Source:      want.Source,
		Changes:     changes,
		DryRun:      req.DryRun != nil && *req.DryRun,
		Guard:       guard,
	}
	if len(req.OldObject.Raw) > 0 && req.SubResource == "" {
		if old, err := decodeObject(req.OldObject.Raw); err == nil {
			c.OldObject = old
		}
	}
	res, err := v.decider().Decide(ctx, c)
	if err != nil {
		v.Log.Error(err, "policy failed", "object", key.String())
		return v.undecided(ctx, req, gvk, guard, want.Source, &res.Input, changes, err)
	}
	d := res.Decision()
	rec := audit.Record{PolicyInput: replayInput(res.Input),
		Type: audit.Decision, Guard: guard, User: req.UserInfo.Username, Groups: req.UserInfo.Groups,
		Operation: operationName(req), Object: audit.Object{Group: gvk.Group, Version: c.Resource.Version, Kind: gvk.Kind, Namespace: req.Namespace, Name: req.Name},
		Fields: audit.FieldsOf(changes), Action: string(d.Action), Reason: d.Reason, Rule: d.Rule,
		PolicyRevision: v.Policy.Revision(), Source: audit.SourceOf(want.Source),
		RequestUID: string(req.UID), DryRun: c.DryRun, PolicyAction: string(res.PolicyAction),
	}
	v.Audit.Log(ctx, rec)
	out := reviewed{resp: allowed(), decided: true, object: incoming, old: old}
	switch d.Action {
	case policy.Deny:
		out.resp = denied(denialMessage(key, want, req, changes, d))
	case policy.Warn:
		out.resp.Warnings = []string{warningMessage(key, want, changes, d)}
	} // allow, and revert (the informer puts Git's state back): admitted
	return out
}

// requestKey is the store key of the object a request is about.
func requestKey(gvk schema.GroupVersionKind, req *admissionv1.AdmissionRequest) render.ObjectKey {
	key := render.ObjectKey{Group: gvk.Group, Kind: gvk.Kind, Namespace: req.Namespace, Name: req.Name}
	if gvk.Group == "" && gvk.Kind == "Namespace" {
		key.Namespace = "" // the API server gives a Namespace's own name as the request's namespace
	}
	return key
}

// reviewOrphan decides the CREATE of an object Git does not have in a
// namespace a Guard owns (one whose Namespace object is in Git): the policy
// sees it with orphan true and no desired object. Other creates of unknown
// objects are admitted without asking.
func (v *Validator) reviewOrphan(ctx context.Context, req *admissionv1.AdmissionRequest, gvk schema.GroupVersionKind, key render.ObjectKey) reviewed {
	guard, ns, ok := v.Store.Lookup(render.ObjectKey{Kind: "Namespace", Name: req.Namespace})
	if !ok {
		return reviewed{resp: allowed()}
	}
	obj, err := decodeObject(req.Object.Raw)
	if err != nil {
		return v.undecided(ctx, req, gvk, guard, ns.Source, nil, nil, fmt.Errorf("decode %s of %s/%s: %w", req.Kind.Kind, req.Namespace, req.Name, err))
	}
	c := decision.Change{
		Operation: string(req.Operation), User: req.UserInfo.Username, UID: req.UserInfo.UID, Groups: req.UserInfo.Groups,
		Resource: policy.Resource{Group: gvk.Group, Version: gvk.Version, Kind: gvk.Kind, Namespace: req.Namespace, Name: req.Name},
		Object:   obj,
		Source:   ns.Source,
		Orphan:   true,
		DryRun:   req.DryRun != nil && *req.DryRun,
		Guard:    guard,
	}
	res, err := v.decider().Decide(ctx, c)
	if err != nil {
		v.Log.Error(err, "policy failed", "object", key.String())
		return v.undecided(ctx, req, gvk, guard, ns.Source, &res.Input, nil, err)
	}
	d := res.Decision()
	v.Audit.Log(ctx, audit.Record{
		Type: audit.Decision, Guard: guard, User: req.UserInfo.Username, Groups: req.UserInfo.Groups,
		Operation: operationName(req), Object: audit.Object{Group: gvk.Group, Version: gvk.Version, Kind: gvk.Kind, Namespace: req.Namespace, Name: req.Name},
		Action: string(d.Action), Reason: d.Reason, Rule: d.Rule, Orphan: true, PolicyInput: replayInput(res.Input),
		PolicyRevision: v.Policy.Revision(), Source: audit.SourceOf(ns.Source),
		RequestUID: string(req.UID), DryRun: c.DryRun, PolicyAction: string(res.PolicyAction),
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
// bodies, which would make every record as large as the object, and with
// the Guard's Helm values and variables digested (policy.RecordedGuardSpec).
func replayInput(in policy.Input) json.RawMessage {
	in.Object, in.OldObject, in.Desired = nil, nil, nil
	in.GuardSpec = policy.RecordedGuardSpec(in.GuardSpec)
	raw, err := json.Marshal(in)
	if err != nil {
		return nil // values come from JSON; a failure only loses replay
	}
	return raw
}

// decider decides with the validator's policy and Guard settings.
func (v *Validator) decider() *decision.Maker {
	var guards decision.Guards
	if v.Settings != nil {
		guards = v.Settings
	}
	return decision.New(v.Policy, guards)
}

// managedKind returns the kind of the object a request is about: the
// request's kind, or for the scale subresource the kind that owns it.
func (v *Validator) managedKind(req *admissionv1.AdmissionRequest) (schema.GroupVersionKind, bool) {
	switch req.SubResource {
	case "":
		return schema.GroupVersionKind{Group: req.Kind.Group, Version: req.Kind.Version, Kind: req.Kind.Kind}, true
	case "ephemeralcontainers", "resize":
		// The request's object is the Pod itself.
		if req.Kind.Group == "" && req.Kind.Kind == "Pod" {
			return schema.GroupVersionKind{Version: req.Kind.Version, Kind: "Pod"}, true
		}
	case "eviction":
		if req.Resource.Group == "" && req.Resource.Resource == "pods" {
			return schema.GroupVersionKind{Version: "v1", Kind: "Pod"}, true
		}
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

// evictionAsDelete returns the CREATE of a pod's eviction as what it is, a
// DELETE of the pod (subresource "eviction"): the API server deletes the
// pod with no DELETE admission of its own. The request's object, an
// Eviction, is not the pod's, and the request has no old object.
func evictionAsDelete(req *admissionv1.AdmissionRequest) *admissionv1.AdmissionRequest {
	if req.SubResource != "eviction" || req.Operation != admissionv1.Create {
		return req
	}
	del := *req
	del.Operation = admissionv1.Delete
	del.Object, del.OldObject = runtime.RawExtension{}, runtime.RawExtension{}
	return &del
}

// changesOf returns the incoming object, the old one (an update's) and
// what the request changes. An
// UPDATE is what it changes in the object it replaces (drift.Edits), with
// Git's value beside each field, so that a person is decided on their own
// change, not on earlier drift. A CREATE of an object Git has is compared
// with Git. A scale is the change of replicas. Another subresource (a pod's
// ephemeral containers, resize) is what it changes in the object.
func (v *Validator) changesOf(req *admissionv1.AdmissionRequest, want *render.Object) (obj, old map[string]any, _ []drift.Change, err error) {
	raw := req.Object.Raw
	if req.Operation == admissionv1.Delete {
		raw = req.OldObject.Raw
	}
	if len(raw) == 0 {
		return nil, nil, nil, nil
	}
	if obj, err = decodeObject(raw); err != nil {
		return nil, nil, nil, fmt.Errorf("decode %s of %s/%s: %w", req.Kind.Kind, req.Namespace, req.Name, err)
	}
	if req.Operation == admissionv1.Delete {
		return obj, nil, nil, nil
	}
	if len(req.OldObject.Raw) > 0 {
		if old, err = decodeObject(req.OldObject.Raw); err != nil {
			return nil, nil, nil, fmt.Errorf("decode the old %s of %s/%s: %w", req.Kind.Kind, req.Namespace, req.Name, err)
		}
	}
	var opts drift.Options
	if v.WriteOptions != nil {
		opts = v.WriteOptions(want.Obj(), obj, req.UserInfo.Username)
	}
	if req.SubResource == "scale" {
		return obj, old, scaleChanges(drift.WithoutIgnored(want.Obj().Object, opts), old, obj), nil
	}
	if old == nil {
		if v.Options != nil {
			opts = v.Options(want.Obj(), obj)
		}
		return obj, old, want.Drift(obj, opts), nil
	}
	return obj, old, drift.Edits(old, obj, want.Obj().Object, opts), nil
}

// scaleChanges is the change of replicas a scale makes (old and updated are
// Scale objects), with Git's value beside it; none when an ignore rule hides
// Git's replicas (want has none), since the fields a rule hides are left to
// whoever owns them.
func scaleChanges(want, old, updated map[string]any) []drift.Change {
	desired, found, _ := unstructuredInt(want, "spec", "replicas")
	if !found {
		return nil
	}
	live, _, _ := unstructuredInt(updated, "spec", "replicas")
	if old == nil {
		if desired == live {
			return nil
		}
		return []drift.Change{{Path: "/spec/replicas", Desired: desired, Live: live}}
	}
	before, _, _ := unstructuredInt(old, "spec", "replicas")
	if before == live {
		return nil
	}
	return []drift.Change{{Path: "/spec/replicas", Desired: desired, Live: live, Old: before}}
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

// undecided answers a request about a managed object (or an orphan) that
// the guard could not decide (overload, an object it cannot decode, a policy
// error or timeout) as the failure policy says, and records it: a change
// admitted without a decision is a record like any other, and the drift
// watcher then judges it like any drift (it carries no stamp).
func (v *Validator) undecided(ctx context.Context, req *admissionv1.AdmissionRequest, gvk schema.GroupVersionKind, guard string, src render.Source, in *policy.Input, changes []drift.Change, why error) reviewed {
	msg := fmt.Sprintf("driftguard could not decide %s of %s %s/%s: %v", req.Operation, req.Kind.Kind, req.Namespace, req.Name, why)
	resp := denied(msg)
	if !v.FailClosed {
		resp = allowed()
		resp.Warnings = []string{msg + "; admitted because the failure policy is Ignore"}
	}
	rec := audit.Record{
		Type: audit.Decision, Guard: guard, User: req.UserInfo.Username, Groups: req.UserInfo.Groups,
		Operation: operationName(req), Object: audit.Object{Group: gvk.Group, Version: gvk.Version, Kind: gvk.Kind, Namespace: req.Namespace, Name: req.Name},
		Action: failureAction(resp), Reason: v.failureReason(), Rule: decision.RuleFailurePolicy,
		PolicyRevision: v.Policy.Revision(), Source: audit.SourceOf(src),
		RequestUID: string(req.UID), DryRun: req.DryRun != nil && *req.DryRun, Error: why.Error(),
	}
	if in != nil {
		rec.PolicyInput, rec.Orphan = replayInput(*in), in.Orphan
	}
	rec.Fields = audit.FieldsOf(changes)
	// The record is written on a context of its own: the request's may be
	// the one that ran out.
	v.Audit.Log(context.WithoutCancel(ctx), rec)
	return reviewed{resp: resp}
}

// failureAction is the recorded action of an undecided response.
func failureAction(r *admissionv1.AdmissionResponse) string {
	if r.Allowed {
		return string(policy.Allow)
	}
	return string(policy.Deny)
}

func (v *Validator) failureReason() string {
	if v.FailClosed {
		return "not decided; denied because the failure policy is Fail"
	}
	return "not decided; admitted without a decision because the failure policy is Ignore"
}

func allowed() *admissionv1.AdmissionResponse {
	return &admissionv1.AdmissionResponse{Allowed: true}
}

func denied(msg string) *admissionv1.AdmissionResponse {
	return &admissionv1.AdmissionResponse{Allowed: false, Result: &metav1.Status{
		Status: metav1.StatusFailure, Code: http.StatusForbidden, Reason: metav1.StatusReasonForbidden, Message: msg,
	}}
}

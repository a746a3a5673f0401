package health

import (
	"context"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Custom assesses the objects it knows better than the built-in rules do,
// for example with Rego (policy.HealthEngine).
type Custom interface {
	// Health returns obj's health and true, or false when it has no opinion
	// about obj. An error means the assessment itself failed.
	Health(ctx context.Context, obj *unstructured.Unstructured) (Result, bool, error)
}

// Assess returns the health of obj (Missing when obj is nil) by the
// built-in rules, without looking at related objects: a Service is then
// assessed without its endpoints. A field of the wrong type gives Unknown,
// with a message naming the field.
func Assess(obj *unstructured.Unstructured) Result {
	r, _ := AssessWith(context.Background(), obj, nil)
	return r
}

// AssessWith is Assess with a Lookup for related objects (nil: none). The
// error is set, and the result is Unknown, when a field cannot be read or
// lookup fails; the message then says why.
func AssessWith(ctx context.Context, obj *unstructured.Unstructured, lookup Lookup) (Result, error) {
	return assessAt(ctx, obj, lookup, time.Now())
}

// assessAt is AssessWith at the time now (deadlines and windows are
// measured to it).
func assessAt(ctx context.Context, obj *unstructured.Unstructured, lookup Lookup, now time.Time) (Result, error) {
	if obj == nil {
		return Result{State: Missing, Message: "not found"}, nil
	}
	f := &fields{obj: obj.Object}
	if f.str("metadata", "deletionTimestamp") != "" {
		return Result{State: Progressing, Message: "terminating"}, nil
	}
	if f.err != nil {
		return unreadable(obj, f.err)
	}
	var (
		r   Result
		err error
	)
	if fn, ok := rules[obj.GroupVersionKind().GroupKind()]; ok {
		r, err = fn(ctx, object{u: obj, f: f, now: now}, lookup)
	} else {
		r = generic(object{u: obj, f: f, now: now})
	}
	if err != nil {
		return Result{State: Unknown, Message: err.Error()}, fmt.Errorf("health of %s: %w", Describe(obj), err)
	}
	if f.err != nil {
		return unreadable(obj, f.err)
	}
	return r, nil
}

func unreadable(obj *unstructured.Unstructured, err error) (Result, error) {
	return Result{State: Unknown, Message: "bad field: " + err.Error()}, fmt.Errorf("health of %s: %w", Describe(obj), err)
}

// AssessCustom asks custom first and falls back to the built-in rules
// (AssessWith) when custom has no opinion or fails. A missing object (nil)
// is Missing and one being deleted is Progressing whatever custom says. A
// failure of custom, or a result with an invalid state, is returned as the
// error next to the built-in result, so that the caller can report it.
func AssessCustom(ctx context.Context, obj *unstructured.Unstructured, lookup Lookup, custom Custom) (Result, error) {
	if obj == nil || obj.GetDeletionTimestamp() != nil || custom == nil {
		return AssessWith(ctx, obj, lookup)
	}
	r, ok, err := custom.Health(ctx, obj)
	if err == nil && ok && !r.State.Valid() {
		err = fmt.Errorf("invalid state %q (want one of %v)", r.State, States)
	}
	if err != nil {
		builtin, berr := AssessWith(ctx, obj, lookup)
		if berr != nil {
			return builtin, fmt.Errorf("custom health of %s: %w; built-in: %w", Describe(obj), err, berr)
		}
		return builtin, fmt.Errorf("custom health of %s: %w", Describe(obj), err)
	}
	if !ok {
		return AssessWith(ctx, obj, lookup)
	}
	return r, nil
}

// Describe names obj for messages: "Kind namespace/name", or "Kind name"
// when it is cluster-scoped.
func Describe(obj *unstructured.Unstructured) string {
	if obj == nil {
		return "<nil>"
	}
	if ns := obj.GetNamespace(); ns != "" {
		return obj.GetKind() + " " + ns + "/" + obj.GetName()
	}
	return obj.GetKind() + " " + obj.GetName()
}

// object is the object being assessed and a reader of its fields.
type object struct {
	u *unstructured.Unstructured
	f *fields
	// now is the time of the assessment.
	now time.Time
}

// rule assesses one kind. Only an error of lookup is returned as an error;
// a field of the wrong type is left in o.f.err.
type rule func(ctx context.Context, o object, lookup Lookup) (Result, error)

// plain adapts a rule that needs neither a context nor a lookup.
func plain(fn func(f *fields) Result) rule {
	return func(_ context.Context, o object, _ Lookup) (Result, error) { return fn(o.f), nil }
}

// timed adapts a rule that measures time (a deadline, a window) to now.
func timed(fn func(f *fields, now time.Time) Result) rule {
	return func(_ context.Context, o object, _ Lookup) (Result, error) { return fn(o.f, o.now), nil }
}

var rules = map[schema.GroupKind]rule{
	{Group: "apps", Kind: "Deployment"}:                              deploymentWithPods,
	{Group: "apps", Kind: "StatefulSet"}:                             plain(statefulSet),
	{Group: "apps", Kind: "DaemonSet"}:                               plain(daemonSet),
	{Group: "batch", Kind: "Job"}:                                    plain(job),
	{Group: "", Kind: "Service"}:                                     service,
	{Group: "networking.k8s.io", Kind: "Ingress"}:                    plain(ingress),
	{Group: "", Kind: "PersistentVolumeClaim"}:                       plain(persistentVolumeClaim),
	{Group: "", Kind: "Pod"}:                                         timed(pod),
	{Group: "autoscaling", Kind: "HorizontalPodAutoscaler"}:          plain(horizontalPodAutoscaler),
	{Group: "apiregistration.k8s.io", Kind: "APIService"}:            timed(apiService),
	{Group: "", Kind: "Namespace"}:                                   plain(namespace),
	{Group: "", Kind: "ConfigMap"}:                                   plain(exists),
	{Group: "", Kind: "Secret"}:                                      plain(exists),
	{Group: "", Kind: "ServiceAccount"}:                              plain(exists),
	{Group: "", Kind: "LimitRange"}:                                  plain(exists),
	{Group: "", Kind: "ResourceQuota"}:                               plain(exists),
	{Group: "", Kind: "Endpoints"}:                                   plain(exists),
	{Group: "discovery.k8s.io", Kind: "EndpointSlice"}:               plain(exists),
	{Group: "rbac.authorization.k8s.io", Kind: "Role"}:               plain(exists),
	{Group: "rbac.authorization.k8s.io", Kind: "ClusterRole"}:        plain(exists),
	{Group: "rbac.authorization.k8s.io", Kind: "RoleBinding"}:        plain(exists),
	{Group: "rbac.authorization.k8s.io", Kind: "ClusterRoleBinding"}: plain(exists),
	{Group: "networking.k8s.io", Kind: "NetworkPolicy"}:              plain(exists),
	{Group: "networking.k8s.io", Kind: "IngressClass"}:               plain(exists),
	{Group: "scheduling.k8s.io", Kind: "PriorityClass"}:              plain(exists),
	{Group: "storage.k8s.io", Kind: "StorageClass"}:                  plain(exists),
}

// exists is the rule of kinds with no health of their own: being there is
// all they can do.
func exists(*fields) Result { return Result{State: Healthy, Message: "exists"} }

func namespace(f *fields) Result {
	if f.str("status", "phase") == "Terminating" {
		return Result{State: Progressing, Message: "terminating"}
	}
	return Result{State: Healthy, Message: "active"}
}

// generationBehind reports an object whose controller has not yet seen its
// latest spec (status.observedGeneration below metadata.generation).
func generationBehind(f *fields) (Result, bool) {
	gen, ok := f.int("metadata", "generation")
	if !ok {
		return Result{}, false
	}
	observed, ok := f.int("status", "observedGeneration")
	if !ok || observed >= gen {
		return Result{}, false
	}
	return result(Progressing, "generation %d not yet observed by its controller (observed %d)", gen, observed), true
}

// plural returns "1 endpoint", "2 endpoints".
func plural(n int64, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

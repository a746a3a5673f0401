package reconcile

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/driftguard/driftguard/api/v1alpha1"
	"github.com/driftguard/driftguard/apply"
	"github.com/driftguard/driftguard/health"
	"github.com/driftguard/driftguard/render"
)

// HealthSource returns the health of a live object as the drift informer
// assessed it; known is false when the kind is not watched (yet).
type HealthSource interface {
	Health(gvk schema.GroupVersionKind, namespace, name string) (r health.Result, known bool)
}

// HealthSummary is the health of one Guard.
type HealthSummary struct {
	State health.State
	// Unhealthy names up to maxUnhealthyListed objects that are not
	// Healthy, for messages ("Kind namespace/name: State: message"), and
	// "and N more" after them when there are more.
	Unhealthy []string
	// Objects are the same objects, for status.unhealthy.
	Objects []v1alpha1.UnhealthyObject
	// Count of objects that are not Healthy.
	Count int
	// RecheckAfter, when not zero, is when the summary should be made
	// again because an answer may change without any event on the object:
	// a Service waiting for ready endpoints (EndpointSlices are not
	// watched), an object read from the API server because no informer
	// watches its kind, an apply the watch has not shown yet.
	RecheckAfter time.Duration
}

// maxUnhealthyListed bounds status.unhealthy.
const maxUnhealthyListed = 20

// HealthTracker sums up the health of a Guard's objects from the informer
// cache.
//
// A Service is assessed again with its EndpointSlices, read from the API
// server: once it is Healthy that answer is kept while the Service does
// not change, and otherwise asked again at most every ServiceRecheck, so
// that an unchanged Guard costs no API calls.
//
// A Deployment that its status calls Healthy or Progressing is checked
// with its pods, read from the API server in the same way: Degraded while
// one of them crash-loops (health.CrashingPods), which its status alone
// shows as a flip between Progressing and Healthy at every restart. One
// scaled to zero with no replica left in its status is not: it has no pod.
//
// An object the guard has just applied is Progressing until the informer
// holds what the API server stored (its resourceVersion, or generation),
// so that a summary made right after an apply never reports the health of
// the object as it was before it.
type HealthTracker struct {
	Source HealthSource
	Live   apply.LiveLookup
	Reader client.Reader
	// Identities, when set, make the reads of a Guard's objects from the
	// API server (kinds not watched, a Service's EndpointSlices) act as the
	// Guard's service account, as its writes do.
	Identities *apply.Identities
	// OnChange, when set, is told when a Guard's health state changes
	// (not on the first summary after start).
	OnChange func(g *v1alpha1.Guard, sum HealthSummary, prev health.State)
	// Recheck, when set, is called with the Guard's name RecheckAfter
	// after a summary that asks for it (DriftStatus.Recheck).
	Recheck func(guard string)
	// PodsPerDeployment bounds the one list of a namespace's pods made for
	// its Deployments (podsByNamespace): at most this many pods for each
	// Deployment asked about. 0 means DefaultPodsPerDeployment.
	PodsPerDeployment int

	// Owner, when set, names the Guard that owns an object
	// (render.Store.Owner): a Guard's summary leaves out the objects of
	// its revision another Guard owns (it never applied them; their
	// health is that Guard's, read as that Guard's account), and reads
	// one its spec.healthChecks names as its own account, never from the
	// informers, which watch as the guard.
	Owner func(render.ObjectKey) string

	mu sync.Mutex
	// services are the answers kept for Services and Deployments, by the
	// account that read them: one account's answer (the endpoints or pods
	// it may not list, "not readable") is never another's.
	services map[readKey]serviceHealth
	states   map[string]health.State // guard -> last summarized state
	applied  map[render.ObjectKey]appliedObject
	sweptAt  time.Time // when applied was last rid of old entries
}

// readKey is an object as one account reads it ("" the guard's own).
type readKey struct {
	reader string
	key    render.ObjectKey
}

type serviceHealth struct {
	resourceVersion string
	result          health.Result
	at              time.Time
	// recheck is how long a not Healthy answer is kept: ServiceRecheck,
	// doubled at every unchanged answer up to maxServiceRecheck, so that a
	// Service that stays without endpoints (scaled to zero) costs a request
	// every few minutes, not every few seconds.
	recheck time.Duration
}

// maxServiceRecheck caps the wait before a Service without ready endpoints
// is asked about again.
const maxServiceRecheck = 2 * time.Minute

// ServiceRecheck is how long a Service's answer without ready endpoints is
// kept before the API server is asked again.
const ServiceRecheck = 5 * time.Second

// Summarize returns the health of the objects of snap, or of the objects
// spec.healthChecks names.
func (t *HealthTracker) Summarize(ctx context.Context, g *v1alpha1.Guard, snap *render.Snapshot) HealthSummary {
	var targets []healthTarget
	if len(g.Spec.HealthChecks) > 0 {
		for _, hc := range g.Spec.HealthChecks {
			gv, _ := schema.ParseGroupVersion(hc.APIVersion)
			gvk := gv.WithKind(hc.Kind)
			targets = append(targets, healthTarget{gvk, render.ObjectKey{Group: gvk.Group, Kind: gvk.Kind, Namespace: hc.Namespace, Name: hc.Name}})
		}
	} else if snap != nil {
		for _, o := range snap.Objects {
			if t.othersObject(g, o.Key) {
				continue
			}
			targets = append(targets, healthTarget{o.GVK(), o.Key})
		}
	}
	sum := t.assess(ctx, g, targets)
	t.mu.Lock()
	if t.states == nil {
		t.states = map[string]health.State{}
	}
	prev, seen := t.states[g.Name]
	t.states[g.Name] = sum.State
	t.mu.Unlock()
	if seen && prev != sum.State && t.OnChange != nil {
		t.OnChange(g, sum, prev)
	}
	if sum.RecheckAfter > 0 && t.Recheck != nil {
		name := g.Name
		time.AfterFunc(sum.RecheckAfter, func() { t.Recheck(name) })
	}
	return sum
}

// othersObject reports whether another Guard than g owns the object key.
func (t *HealthTracker) othersObject(g *v1alpha1.Guard, key render.ObjectKey) bool {
	if t.Owner == nil {
		return false
	}
	owner := t.Owner(key)
	return owner != "" && owner != g.Name
}

// Assess returns the health of objs (a sync wave) without recording it as
// the Guard's health.
func (t *HealthTracker) Assess(ctx context.Context, g *v1alpha1.Guard, objs []*render.Object) HealthSummary {
	targets := make([]healthTarget, 0, len(objs))
	for _, o := range objs {
		targets = append(targets, healthTarget{o.GVK(), o.Key})
	}
	return t.assess(ctx, g, targets)
}

type healthTarget struct {
	gvk schema.GroupVersionKind
	key render.ObjectKey
}

func (t *HealthTracker) assess(ctx context.Context, g *v1alpha1.Guard, targets []healthTarget) HealthSummary {
	results := make([]health.Result, len(targets))
	var recheck time.Duration
	again := func(d time.Duration) {
		if d > 0 && (recheck == 0 || d < recheck) {
			recheck = d
		}
	}
	services := map[int]*unstructured.Unstructured{}    // index -> live Service to check with its endpoints
	deployments := map[int]*unstructured.Unstructured{} // index -> live Deployment to check with its pods
	reader, who := t.readerFor(ctx, g), t.readerName(g)
	for i, tg := range targets {
		if r, ok := t.unobserved(tg.gvk, tg.key); ok {
			results[i] = r
			again(unobservedRecheck)
			continue
		}
		r, known := health.Result{}, false
		// Another Guard's object (a health check may name one) is read as
		// this Guard's account: what the informers hold, read as the
		// guard, is not this Guard's to see.
		if t.Source != nil && !t.othersObject(g, tg.key) {
			r, known = t.Source.Health(tg.gvk, tg.key.Namespace, tg.key.Name)
		}
		switch {
		case !known:
			r = t.read(ctx, reader, tg.gvk, tg.key)
			again(recheckUnless(r, ServiceRecheck))
		case tg.gvk.Group == "" && tg.gvk.Kind == "Service" && r.State == health.Healthy && t.Live != nil && reader != nil:
			if cached, left, kept, live := t.remembered(who, tg); kept {
				r = cached
				again(recheckUnless(r, left))
			} else if live != nil && withEndpoints(live) {
				services[i] = live
			}
		case withPods(tg.gvk, r) && t.Live != nil && reader != nil:
			if cached, left, kept, live := t.remembered(who, tg); kept {
				r = crashingOr(cached, r)
				again(recheckUnless(cached, left))
			} else if live != nil {
				deployments[i] = live
			}
		}
		if !r.Until.IsZero() {
			// The answer stops holding then without an event (a deadline,
			// a restart window): look again just after it.
			again(max(time.Until(r.Until), 0) + untilMargin)
		}
		results[i] = r
	}
	for i, a := range t.assessServices(ctx, reader, who, services) {
		results[i] = a.result
		again(recheckUnless(a.result, a.recheck))
	}
	for i, a := range t.assessPods(ctx, reader, who, deployments) {
		results[i] = crashingOr(a.result, results[i])
		again(recheckUnless(a.result, a.recheck))
		if !a.result.Until.IsZero() {
			again(max(time.Until(a.result.Until), 0) + untilMargin)
		}
	}

	return summarize(targets, results, recheck)
}

// summarize sums up the results of targets (in the same order).
func summarize(targets []healthTarget, results []health.Result, recheck time.Duration) HealthSummary {
	type listed struct {
		text string
		obj  v1alpha1.UnhealthyObject
	}
	var (
		states    []health.State
		unhealthy []listed
	)
	for i, r := range results {
		states = append(states, r.State)
		// Worst: an object with no health of its own (NoHealth) is not
		// listed as unhealthy.
		if health.Worst(r.State) != health.Healthy {
			k := targets[i].key
			unhealthy = append(unhealthy, listed{fmt.Sprintf("%s: %s", k.Display(), r),
				v1alpha1.UnhealthyObject{ObjectName: objectName(k), State: string(r.State), Message: r.Message}})
		}
	}
	slices.SortFunc(unhealthy, func(a, b listed) int { return strings.Compare(a.text, b.text) })
	sum := HealthSummary{State: health.Worst(states...), Count: len(unhealthy), RecheckAfter: recheck}
	for _, u := range unhealthy[:min(len(unhealthy), maxUnhealthyListed)] {
		sum.Unhealthy = append(sum.Unhealthy, u.text)
		sum.Objects = append(sum.Objects, u.obj)
	}
	if len(unhealthy) > maxUnhealthyListed {
		sum.Unhealthy = append(sum.Unhealthy, fmt.Sprintf("and %d more", len(unhealthy)-maxUnhealthyListed))
	}
	return sum
}

// untilMargin is how long after a result's Until the summary is made
// again, so that the result is then assessed afresh.
const untilMargin = 100 * time.Millisecond

func recheckUnless(r health.Result, after time.Duration) time.Duration {
	if health.Worst(r.State) == health.Healthy {
		return 0
	}
	return after
}

// read assesses an object the informers do not watch (a health check of a
// kind Git does not hold) straight from the API server.
func (t *HealthTracker) read(ctx context.Context, reader client.Reader, gvk schema.GroupVersionKind, key render.ObjectKey) health.Result {
	if reader == nil {
		return health.Result{State: health.Unknown, Message: "not watched"}
	}
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(gvk)
	if err := reader.Get(ctx, client.ObjectKey{Namespace: key.Namespace, Name: key.Name}, u); err != nil {
		if apply.IsNotFoundOrGone(err) {
			return health.Result{State: health.Missing, Message: "not found"}
		}
		return health.Result{State: health.Unknown, Message: err.Error()}
	}
	r, _ := health.AssessWith(ctx, u, health.ClientLookup(reader))
	return r
}

// readerFor is the reader of a Guard's objects: the Guard's identity when
// it has a service account, else Reader. A service account that cannot be
// used reads nothing (the reconcile reports why).
func (t *HealthTracker) readerFor(ctx context.Context, g *v1alpha1.Guard) client.Reader {
	if t.Identities == nil || t.Reader == nil {
		return t.Reader
	}
	if name, _ := t.Identities.ServiceAccountOf(g); name == "" {
		return t.Reader
	}
	id, err := t.Identities.For(ctx, g)
	if err != nil {
		return nil
	}
	return id.Client
}

// readerName names the reader readerFor returns: the Guard's service
// account, "" for Reader.
func (t *HealthTracker) readerName(g *v1alpha1.Guard) string {
	if t.Identities == nil || t.Reader == nil {
		return ""
	}
	name, _ := t.Identities.ServiceAccountOf(g)
	return name
}

// remembered returns the kept answer for a Service or Deployment while its
// live object has not changed (kept, and how long it holds), or else the
// live object to assess (nil when it is not cached). The resourceVersion is
// read without decoding the object when the live cache can tell it
// (apply.LiveCache): a full reconcile of unchanged objects then decodes none
// of them.
func (t *HealthTracker) remembered(who string, tg healthTarget) (r health.Result, left time.Duration, kept bool, live *unstructured.Unstructured) {
	if lc, ok := t.Live.(apply.LiveCache); ok {
		if rv, ok := lc.LiveVersion(tg.gvk, tg.key.Namespace, tg.key.Name); ok {
			if r, left, ok := t.cachedAt(readKey{who, tg.key}, rv); ok {
				return r, left, true, nil
			}
		}
	}
	live, ok := t.Live.Live(tg.gvk, tg.key.Namespace, tg.key.Name)
	if !ok || live == nil {
		return health.Result{}, 0, false, nil
	}
	if r, left, ok := t.cachedAt(readKey{who, tg.key}, live.GetResourceVersion()); ok {
		return r, left, true, nil
	}
	return health.Result{}, 0, false, live
}

// cachedAt returns the remembered health of a Service or Deployment at
// resourceVersion rv, and how long it is kept still: while it is Healthy
// and unchanged, else for its recheck.
func (t *HealthTracker) cachedAt(key readKey, rv string) (health.Result, time.Duration, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	prev, ok := t.services[key]
	if !ok || prev.resourceVersion != rv {
		return health.Result{}, 0, false
	}
	if prev.result.State == health.Healthy {
		return prev.result, 0, true
	}
	if left := prev.recheck - time.Since(prev.at); left > 0 {
		return prev.result, left, true
	}
	return health.Result{}, 0, false
}

// assessServices assesses Services with their EndpointSlices, listed from the
// API server once per namespace rather than once per Service (and once per
// batch of summaries under WithSharedReads), as reader, named who.
func (t *HealthTracker) assessServices(ctx context.Context, reader client.Reader, who string, svcs map[int]*unstructured.Unstructured) map[int]serviceHealth {
	if len(svcs) == 0 {
		return nil
	}
	slices := map[string]health.Objects{} // namespace -> its EndpointSlices of Services
	listErr := map[string]error{}
	out := make(map[int]serviceHealth, len(svcs))
	for i, svc := range svcs {
		ns := svc.GetNamespace()
		if _, done := slices[ns]; !done && listErr[ns] == nil {
			list, err := endpointSlices(ctx, reader, who, ns)
			if err != nil {
				listErr[ns] = err
			} else {
				slices[ns] = list
			}
		}
		err := listErr[ns]
		if err != nil && !apierrors.IsForbidden(err) {
			out[i] = serviceHealth{result: health.Result{State: health.Unknown, Message: err.Error()}, recheck: ServiceRecheck}
			continue
		}
		r := health.Result{State: health.Healthy, Message: "endpoints not readable"}
		if err == nil {
			r, _ = health.AssessWith(ctx, svc, slices[ns])
		}
		// else the reader may not list EndpointSlices: the Service's own
		// answer stands, as a Deployment's does without its pods.
		key := readKey{who, render.KeyOf(svc)}
		t.mu.Lock()
		if t.services == nil {
			t.services = map[readKey]serviceHealth{}
		}
		sh := serviceHealth{resourceVersion: svc.GetResourceVersion(), result: r, at: time.Now(), recheck: ServiceRecheck}
		if prev, ok := t.services[key]; ok && prev.resourceVersion == sh.resourceVersion && prev.result == r {
			sh.recheck = min(2*prev.recheck, maxServiceRecheck)
		}
		t.services[key] = sh
		t.mu.Unlock()
		out[i] = sh
	}
	return out
}

// withPods reports whether the informer's answer r about an object of gvk
// is checked with the object's pods: a Deployment that its status calls
// Healthy or Progressing (health.CrashingPods), unless its status says it
// runs no pod (health.Result.NoPods: scaled to zero, no replica left).
func withPods(gvk schema.GroupVersionKind, r health.Result) bool {
	return gvk.Group == "apps" && gvk.Kind == "Deployment" && (r.State == health.Healthy || r.State == health.Progressing) && !r.NoPods
}

// crashingOr is the pods' answer when they crash-loop (Degraded), else
// the Deployment's own.
func crashingOr(pods, own health.Result) health.Result {
	if pods.State == health.Degraded || pods.State == health.Unknown {
		return pods
	}
	return own
}

// assessPods checks the pods of Deployments (health.CrashingPods), read
// from the API server (podsByNamespace). The answer is kept like a
// Service's (cachedAt): while the Deployment does not change when
// none of its pods crash-loops, else for a recheck that grows while
// nothing changes. A crash-looping pod changes its Deployment's status at
// every restart, so its answer is read afresh then.
func (t *HealthTracker) assessPods(ctx context.Context, reader client.Reader, who string, deployments map[int]*unstructured.Unstructured) map[int]serviceHealth {
	out := make(map[int]serviceHealth, len(deployments))
	per := t.PodsPerDeployment
	if per <= 0 {
		per = DefaultPodsPerDeployment
	}
	pods := podsByNamespace(ctx, reader, deployments, per)
	for i, d := range deployments {
		r, crashing, err := health.CrashingPods(ctx, d, pods(d.GetNamespace()))
		switch {
		case apierrors.IsForbidden(err):
			// The reader may not list pods: the Deployment's own status
			// stands, and nobody is asked again until it changes.
			r = health.Result{State: health.Healthy, Message: "pods not readable"}
		case err != nil:
			r = health.Result{State: health.Unknown, Message: err.Error()}
		case !crashing:
			r = health.Result{State: health.Healthy, Message: "no pod crash-looping"}
		}
		key := readKey{who, render.KeyOf(d)}
		t.mu.Lock()
		if t.services == nil {
			t.services = map[readKey]serviceHealth{}
		}
		sh := serviceHealth{resourceVersion: d.GetResourceVersion(), result: r, at: time.Now(), recheck: ServiceRecheck}
		if prev, ok := t.services[key]; ok && prev.resourceVersion == sh.resourceVersion && prev.result.State == r.State {
			sh.recheck = min(2*prev.recheck, maxServiceRecheck)
		}
		t.services[key] = sh
		t.mu.Unlock()
		out[i] = sh
	}
	return out
}

// DefaultPodsPerDeployment is HealthTracker.PodsPerDeployment's default.
const DefaultPodsPerDeployment = 100

// podsByNamespace returns where the pods of deployments are looked up: a
// namespace holding two or more of them is listed once (its pods filtered
// by each selector here), one holding one is asked by that selector, as a
// namespace's other pods may be many. The one list is bounded (perDeployment
// pods for each Deployment): anyone who may create pods in a namespace can
// fill it, and past the bound each Deployment is asked by its selector, so
// the guard never holds more of a namespace's pods than its Deployments'.
func podsByNamespace(ctx context.Context, reader client.Reader, deployments map[int]*unstructured.Unstructured, perDeployment int) func(namespace string) health.Lookup {
	per := map[string]int{}
	for _, d := range deployments {
		per[d.GetNamespace()]++
	}
	direct := health.ClientLookup(reader)
	listed := map[string]health.Lookup{}
	for ns, n := range per {
		if n < 2 {
			continue
		}
		if l, ok := listAtMost(ctx, reader, ns, int64(n*perDeployment)); ok {
			listed[ns] = l
		}
	}
	return func(namespace string) health.Lookup {
		if l, ok := listed[namespace]; ok {
			return l
		}
		return direct
	}
}

// listAtMost lists a namespace's pods when they are at most limit (or the
// error the list met); false when there are more.
func listAtMost(ctx context.Context, reader client.Reader, namespace string, limit int64) (listedPods, bool) {
	objs, more, err := health.List(ctx, reader, health.PodGVK, namespace, client.Limit(limit))
	if err != nil {
		return listedPods{err: err}, true
	}
	return listedPods{objs: objs}, more == ""
}

// listedPods answers from one list of a namespace's pods, or with the error
// that list met.
type listedPods struct {
	objs []*unstructured.Unstructured
	err  error
}

func (l listedPods) List(_ context.Context, _ schema.GroupVersionKind, namespace string, selector labels.Selector) ([]*unstructured.Unstructured, error) {
	if l.err != nil {
		return nil, l.err
	}
	var out []*unstructured.Unstructured
	for _, p := range l.objs {
		if p.GetNamespace() == namespace && (selector == nil || selector.Matches(labels.Set(p.GetLabels()))) {
			out = append(out, p)
		}
	}
	return out, nil
}

// Forget drops what is remembered of a Guard and its Services.
func (t *HealthTracker) Forget(guard string, snap *render.Snapshot) {
	t.mu.Lock()
	defer t.mu.Unlock()
	delete(t.states, guard)
	if snap == nil {
		return
	}
	gone := make(map[render.ObjectKey]bool, len(snap.Objects))
	for _, o := range snap.Objects {
		gone[o.Key] = true
		delete(t.applied, o.Key)
	}
	maps.DeleteFunc(t.services, func(k readKey, _ serviceHealth) bool { return gone[k.key] })
}

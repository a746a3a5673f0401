package selfheal

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"

	"github.com/driftguard/driftguard/apply"
	"github.com/driftguard/driftguard/audit"
	"github.com/driftguard/driftguard/decision"
	"github.com/driftguard/driftguard/policy"
	"github.com/driftguard/driftguard/render"
	"github.com/driftguard/driftguard/stamp"
)

// Decider is the policy asked what to do about a drift.
type Decider interface {
	Decide(ctx context.Context, in policy.Input) (policy.Decision, error)
}

// Settings tells, per guard, whether drift is reverted, for how long a
// temporary change (break-glass) is kept, and what package decision needs
// (enforcement, policy data, spec).
type Settings interface {
	SelfHeal(guard string) bool
	BreakGlassTTL(guard string) time.Duration
	decision.Guards
}

// Watcher runs one informer per managed kind and a work queue that compares
// and reverts.
type Watcher struct {
	Dynamic dynamic.Interface
	Mapper  meta.RESTMapper
	Store   *render.Store
	// Applier puts Git's state back: each write names the Guard the object
	// belongs to (as the Store says, never as a label on the object does)
	// and acts as that Guard's identity (apply.Applier.ForGuard).
	Applier  *apply.Applier
	Policy   Decider
	Settings Settings
	Audit    *audit.Logger
	// LabelKey selects managed objects; only objects carrying it are cached.
	LabelKey string
	// Workers process the queue in parallel; each object is handled by one at a time.
	Workers int
	// Stamps verifies the changed-by stamps of the admission webhook; a
	// drift whose stamp does not verify (or without Stamps) is attributed
	// to "unknown".
	Stamps *stamp.Signer
	// APIServerStamps reports whether the API server's own stamp
	// (v1alpha1.APIServerChangedByAnnotation, written by the compiled
	// MutatingAdmissionPolicy on every update) is in force for the objects
	// of a kind in a namespace, and so names the last writer; nil: never.
	APIServerStamps func(namespace string, gvk schema.GroupVersionKind) bool
	// Changed, when set, is told of each guard whose set of drifted objects changed.
	Changed func(guard string)
	// HealthChanged, when set, is told of each guard one of whose objects
	// changed health state.
	HealthChanged func(guard string)
	Log           logr.Logger

	mu         sync.Mutex
	informers  map[schema.GroupVersionKind]*kindInformer
	queue      workqueue.TypedRateLimitingInterface[item]
	resync     chan struct{}
	state      *driftState
	fights     *fights
	health     *healthBook // made on first use: see book
	healthOnce sync.Once
}

type kindInformer struct {
	gvr      schema.GroupVersionResource
	informer cache.SharedIndexInformer
	stop     context.CancelFunc
}

// item is one object in the work queue.
type item struct {
	gvk       schema.GroupVersionKind
	namespace string
	name      string
}

func (it item) key() render.ObjectKey {
	return render.ObjectKey{Group: it.gvk.Group, Kind: it.gvk.Kind, Namespace: it.namespace, Name: it.name}
}

// Start runs the watcher until ctx ends; it implements manager.Runnable.
func (w *Watcher) Start(ctx context.Context) error {
	w.mu.Lock()
	w.informers = map[schema.GroupVersionKind]*kindInformer{}
	w.queue = workqueue.NewTypedRateLimitingQueueWithConfig(
		workqueue.NewTypedItemExponentialFailureRateLimiter[item](20*time.Millisecond, 30*time.Second),
		workqueue.TypedRateLimitingQueueConfig[item]{Name: "driftguard_drift"})
	w.resync = make(chan struct{}, 1)
	w.state = newDriftState()
	w.fights = newFights()
	w.mu.Unlock()
	w.Store.Subscribe(w.kick)
	w.kick()

	workers := w.Workers
	if workers <= 0 {
		workers = 4
	}
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for w.processNext(ctx) {
			}
		})
	}
	w.syncLoop(ctx)
	w.queue.ShutDown()
	wg.Wait()
	w.mu.Lock()
	for _, ki := range w.informers {
		ki.stop()
	}
	w.mu.Unlock()
	return nil
}

// kick asks the sync loop to start and stop informers for the store's kinds.
func (w *Watcher) kick() {
	select {
	case w.resync <- struct{}{}:
	default:
	}
}

// syncLoop keeps one informer per kind in the store. Kinds whose definition
// is not served yet (a CRD applied in the same revision) are tried again.
// The fights of Guards gone from the store end, their series with them.
func (w *Watcher) syncLoop(ctx context.Context) {
	retry := time.NewTicker(5 * time.Second)
	defer retry.Stop()
	for {
		w.syncInformers(ctx)
		w.fights.forgetGuards(w.hasGuard)
		select {
		case <-ctx.Done():
			return
		case <-w.resync:
		case <-retry.C:
		}
	}
}

// hasGuard reports whether the store keeps a snapshot of guard.
func (w *Watcher) hasGuard(guard string) bool {
	_, ok := w.Store.Snapshot(guard)
	return ok
}

func (w *Watcher) syncInformers(ctx context.Context) {
	want := map[schema.GroupVersionKind]bool{}
	for _, gvk := range w.Store.Kinds() {
		want[gvk] = true
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	for gvk, ki := range w.informers {
		if !want[gvk] {
			ki.stop()
			delete(w.informers, gvk)
			w.book().forgetKind(gvk)
			w.Log.Info("stopped watching kind", "kind", gvk.String())
		}
	}
	for gvk := range want {
		if _, ok := w.informers[gvk]; ok {
			continue
		}
		ki, err := w.newInformer(ctx, gvk)
		if err != nil {
			w.Log.V(1).Info("cannot watch kind yet", "kind", gvk.String(), "error", err.Error())
			continue
		}
		w.informers[gvk] = ki
		w.Log.Info("watching kind", "kind", gvk.String(), "resource", ki.gvr.String())
	}
}

func (w *Watcher) newInformer(ctx context.Context, gvk schema.GroupVersionKind) (*kindInformer, error) {
	mapping, err := w.Mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if err != nil {
		if meta.IsNoMatchError(err) {
			if rm, ok := w.Mapper.(meta.ResettableRESTMapper); ok {
				rm.Reset()
			}
		}
		return nil, fmt.Errorf("map %s: %w", gvk, err)
	}
	label := w.LabelKey
	inf := dynamicinformer.NewFilteredDynamicInformer(w.Dynamic, mapping.Resource, metav1.NamespaceAll, 0, cache.Indexers{},
		func(o *metav1.ListOptions) { o.LabelSelector = label }).Informer()
	if err := inf.SetTransform(w.transformFor(gvk)); err != nil {
		return nil, fmt.Errorf("informer for %s: %w", gvk, err)
	}
	enqueue := func(obj any) {
		if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
			obj = t.Obj
		}
		o, ok := obj.(metav1.Object)
		if !ok {
			return
		}
		w.queue.Add(item{gvk: gvk, namespace: o.GetNamespace(), name: o.GetName()})
	}
	book := w.book()
	deleted := func(obj any) {
		if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
			obj = t.Obj
		}
		if o, ok := obj.(metav1.Object); ok && book.forget(item{gvk: gvk, namespace: o.GetNamespace(), name: o.GetName()}) && w.HealthChanged != nil {
			w.HealthChanged(o.GetLabels()[w.LabelKey])
		}
		enqueue(obj)
	}
	if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    enqueue,
		UpdateFunc: func(_, n any) { enqueue(n) },
		DeleteFunc: deleted,
	}); err != nil {
		return nil, fmt.Errorf("informer for %s: %w", gvk, err)
	}
	if err := inf.SetWatchErrorHandlerWithContext(func(_ context.Context, _ *cache.Reflector, err error) {
		w.Log.Info("watch error; the informer retries with backoff", "kind", gvk.String(), "error", err.Error())
	}); err != nil {
		return nil, fmt.Errorf("informer for %s: %w", gvk, err)
	}
	ictx, cancel := context.WithCancel(ctx)
	go inf.RunWithContext(ictx)
	go w.notifySynced(ictx, gvk, inf)
	return &kindInformer{gvr: mapping.Resource, informer: inf, stop: cancel}, nil
}

// Live returns the cached live object; known is false when the kind is not
// watched or its cache has not synced yet. It implements apply.LiveLookup.
func (w *Watcher) Live(gvk schema.GroupVersionKind, namespace, name string) (*unstructured.Unstructured, bool) {
	inf, ok := w.synced(gvk)
	if !ok {
		return nil, false
	}
	return getCached(inf, namespace, name), true
}

// synced returns the informer of gvk once its cache has synced.
func (w *Watcher) synced(gvk schema.GroupVersionKind) (cache.SharedIndexInformer, bool) {
	w.mu.Lock()
	ki, ok := w.informers[gvk]
	w.mu.Unlock()
	if !ok || !ki.informer.HasSynced() {
		return nil, false
	}
	return ki.informer, true
}

// LiveVersion returns the resourceVersion of the cached object, without
// decoding it; false when it is not cached or its kind not watched (yet).
// It implements apply.LiveCache.
func (w *Watcher) LiveVersion(gvk schema.GroupVersionKind, namespace, name string) (string, bool) {
	inf, ok := w.synced(gvk)
	if !ok {
		return "", false
	}
	m, ok := cached(inf, namespace, name).(metav1.Object)
	if !ok {
		return "", false
	}
	return m.GetResourceVersion(), true
}

// cached returns what the informer's cache holds for an object (shared:
// not to be changed), nil when nothing.
func cached(inf cache.SharedIndexInformer, namespace, name string) any {
	key := name
	if namespace != "" {
		key = namespace + "/" + name
	}
	obj, exists, err := inf.GetIndexer().GetByKey(key)
	if err != nil || !exists {
		return nil
	}
	return obj
}

// getCached returns a copy of a cached live object, nil when it is not in
// the cache.
func getCached(inf cache.SharedIndexInformer, namespace, name string) *unstructured.Unstructured {
	switch o := cached(inf, namespace, name).(type) {
	case *compactObject:
		u, err := o.expand()
		if err != nil {
			return nil // compact encoded it: cannot happen
		}
		return u
	case *unstructured.Unstructured:
		return o
	}
	return nil
}

// Accepted reports whether the object may differ from Git for now: with the
// policy's consent (break-glass, warn, enforcement off), or because the guard
// stopped a fight over it. A full reconcile of the same revision leaves it alone.
func (w *Watcher) Accepted(gvk schema.GroupVersionKind, namespace, name string) bool {
	w.mu.Lock()
	st, f := w.state, w.fights
	w.mu.Unlock()
	it := item{gvk: gvk, namespace: namespace, name: name}
	return st != nil && (st.isAccepted(it) || f.stoppedFor(it))
}

// Fights lists, for a guard, the objects it stopped reverting because another
// field manager changes them back every time.
func (w *Watcher) Fights(guard string) []string {
	w.mu.Lock()
	f := w.fights
	w.mu.Unlock()
	if f == nil {
		return nil
	}
	return f.of(guard)
}

// Drifted returns how many objects of the guard differ from Git right now,
// and the keys of up to limit of them, in the order of render.CompareKeys.
func (w *Watcher) Drifted(guard string, limit int) (int, []render.ObjectKey) {
	w.mu.Lock()
	st := w.state
	w.mu.Unlock()
	if st == nil {
		return 0, nil
	}
	return st.list(guard, limit)
}

// stripForCache drops what the comparison never reads, to keep the cache small:
// status (but a Service's), the field sets of the guard's own apply entry and
// of status-subresource managed fields entries (other managers' sets stay, for
// additions and managedFieldsManagers ignore rules, the guard's patches' too,
// whose name a writer may borrow; the apply entry's set is read from the API
// server when a person may have written it: compare; manager, operation and
// time stay for attribution), and the last-applied annotation.
func stripForCache(obj any) (any, error) {
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return obj, nil
	}
	if u.GetKind() != "Service" || u.GetAPIVersion() != "v1" {
		// A Service keeps its small status: its health is assessed again,
		// with its endpoints, when a Guard's health is summed up.
		delete(u.Object, "status")
	}
	// In place on the unstructured list: the typed Get/SetManagedFields
	// round trip would copy every entry of every cached object.
	md, _ := u.Object["metadata"].(map[string]any)
	entries, _ := md["managedFields"].([]any)
	for _, e := range entries {
		if m, ok := e.(map[string]any); ok && (guardApply(m) || m["subresource"] == "status") {
			delete(m, "fieldsV1")
		}
	}
	if ann, ok := md["annotations"].(map[string]any); ok {
		delete(ann, "kubectl.kubernetes.io/last-applied-configuration")
	}
	return u, nil
}

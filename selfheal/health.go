package selfheal

import (
	"context"
	"sync"
	"sync/atomic"
	"time"
	"unique"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/driftguard/driftguard/health"
	"github.com/driftguard/driftguard/render"
)

// healthBook holds the health of every cached object, assessed from the
// full object as it arrives, before the cache transform strips its status.
// The cache itself keeps no status, so this is the only place it lives.
type healthBook struct {
	mu sync.RWMutex
	// results holds one handle each: objects of a Guard mostly share a
	// handful of results (Healthy, "0 of 0 replicas"), kept once.
	results map[item]unique.Handle[health.Result]
	// expiring keeps the full object of a result that holds only until a
	// time (health.Result.Until: a deadline, a restart window), so that it
	// can be assessed again then: the cache has dropped its status, and no
	// event may come.
	expiring map[item]*unstructured.Unstructured
	custom   atomic.Pointer[customHealth]
}

type customHealth struct{ c health.Custom }

func newHealthBook() *healthBook {
	return &healthBook{results: map[item]unique.Handle[health.Result]{}, expiring: map[item]*unstructured.Unstructured{}}
}

// assess is the health of obj by the custom rules, then the built-in ones.
func (b *healthBook) assess(obj *unstructured.Unstructured) health.Result {
	if c := b.custom.Load(); c != nil && c.c != nil {
		r, err := health.AssessCustom(context.Background(), obj, nil, c.c)
		if err != nil {
			// The built-in result stands; the failure shows where it is read.
			r.Message += " (custom health rule failed: " + err.Error() + ")"
		}
		return r
	}
	return health.Assess(obj)
}

// note assesses obj and stores the result; it returns true when the
// object's state (not only its message) changed.
func (b *healthBook) note(it item, obj *unstructured.Unstructured) bool {
	r := b.assess(obj)
	var keep *unstructured.Unstructured
	if !r.Until.IsZero() {
		keep = obj.DeepCopy()
	}
	h := unique.Make(r)
	b.mu.Lock()
	prev, had := b.results[it]
	b.results[it] = h
	if keep != nil {
		b.expiring[it] = keep
	} else {
		delete(b.expiring, it)
	}
	b.mu.Unlock()
	return !had || prev.Value().State != r.State
}

func (b *healthBook) forget(it item) bool {
	b.mu.Lock()
	_, had := b.results[it]
	delete(b.results, it)
	delete(b.expiring, it)
	b.mu.Unlock()
	return had
}

// get returns the stored result, assessed again from the kept object when
// it holds only until a time that has passed.
func (b *healthBook) get(it item) (health.Result, bool) {
	b.mu.RLock()
	h, ok := b.results[it]
	obj := b.expiring[it]
	b.mu.RUnlock()
	if !ok {
		return health.Result{}, false
	}
	r := h.Value()
	if r.Until.IsZero() || time.Now().Before(r.Until) || obj == nil {
		return r, true
	}
	fresh := b.assess(obj)
	b.mu.Lock()
	defer b.mu.Unlock()
	cur, ok := b.results[it]
	switch {
	case !ok:
		return health.Result{}, false // forgotten meanwhile
	case cur != h || b.expiring[it] != obj:
		return cur.Value(), true // an event stored a newer result meanwhile
	}
	b.results[it] = unique.Make(fresh)
	if fresh.Until.IsZero() {
		delete(b.expiring, it)
	}
	return fresh, true
}

func (b *healthBook) forgetKind(gvk schema.GroupVersionKind) {
	b.mu.Lock()
	for it := range b.results {
		if it.gvk == gvk {
			delete(b.results, it)
			delete(b.expiring, it)
		}
	}
	b.mu.Unlock()
}

// book returns the health book, made on first use.
func (w *Watcher) book() *healthBook {
	w.healthOnce.Do(func() { w.health = newHealthBook() })
	return w.health
}

// SetCustomHealth sets the custom health rules (Rego) that objects are
// assessed with from now on; nil returns to the built-in rules.
func (w *Watcher) SetCustomHealth(c health.Custom) {
	w.book().custom.Store(&customHealth{c: c})
}

// Health returns the health of a cached object, assessed from the live
// object with its status; known is false when the kind is not watched or
// its cache has not synced. An object that is not in the cache is Missing.
func (w *Watcher) Health(gvk schema.GroupVersionKind, namespace, name string) (health.Result, bool) {
	if _, ok := w.synced(gvk); !ok {
		return health.Result{}, false
	}
	if r, ok := w.book().get(item{gvk: gvk, namespace: namespace, name: name}); ok {
		return r, true
	}
	return health.Result{State: health.Missing, Message: "not found"}, true
}

// transformFor returns the cache transform of a kind: note the object's
// health, then strip what the comparison does not read. A change of health
// state is told to HealthChanged.
func (w *Watcher) transformFor(gvk schema.GroupVersionKind) func(any) (any, error) {
	book := w.book()
	return func(obj any) (any, error) {
		if u, ok := obj.(*unstructured.Unstructured); ok {
			it := item{gvk: gvk, namespace: u.GetNamespace(), name: u.GetName()}
			if book.note(it, u) && w.HealthChanged != nil {
				// The Guard is the one whose snapshot holds the object, not
				// the label's value, which any writer sets (and which names
				// Guards of other shards too).
				if guard, _, ok := w.lookup(it.key()); ok {
					w.HealthChanged(guard)
				}
			}
			stripped, err := stripForCache(u)
			if err != nil {
				return nil, err
			}
			return compact(stripped.(*unstructured.Unstructured), w.LabelKey)
		}
		return stripForCache(obj)
	}
}

// lookup is Store.Lookup, nothing without a store.
func (w *Watcher) lookup(key render.ObjectKey) (string, *render.Object, bool) {
	if w.Store == nil {
		return "", nil, false
	}
	return w.Store.Lookup(key)
}

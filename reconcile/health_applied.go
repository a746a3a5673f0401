package reconcile

import (
	"context"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/resourceversion"

	"github.com/driftguard/driftguard/health"
	"github.com/driftguard/driftguard/render"
)

// appliedObject is what the API server stored for an apply, remembered
// until the informer's cache holds it (or something newer).
type appliedObject struct {
	uid             types.UID
	resourceVersion string
	generation      int64
	at              time.Time
}

const (
	// unobservedGrace bounds how long an apply waits to be seen by the
	// watch; past it the informer's answer stands whatever it is.
	unobservedGrace = time.Minute
	// unobservedRecheck is when a summary holding an object the watch has
	// not shown yet is made again (the watch is normally milliseconds
	// behind the apply).
	unobservedRecheck = time.Second
)

// Applied remembers an object as the API server stored it for an apply
// (Applier.Applied).
func (t *HealthTracker) Applied(stored *unstructured.Unstructured) {
	now := time.Now()
	a := appliedObject{uid: stored.GetUID(), resourceVersion: stored.GetResourceVersion(), generation: stored.GetGeneration(), at: now}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.applied == nil {
		t.applied = map[render.ObjectKey]appliedObject{}
	}
	t.applied[render.KeyOf(stored)] = a
	// Objects no summary asks about (pruned since, or outside
	// spec.healthChecks) are dropped once their grace is over.
	if now.Sub(t.sweptAt) > unobservedGrace {
		for k, old := range t.applied {
			if now.Sub(old.at) > unobservedGrace {
				delete(t.applied, k)
			}
		}
		t.sweptAt = now
	}
}

// unobserved returns Progressing while the informer's cache does not yet
// hold what the last apply of the object stored: its health book still
// speaks of the object before the apply (the old image of a Deployment
// rolled out long ago: Healthy) or of no object at all (Missing).
func (t *HealthTracker) unobserved(gvk schema.GroupVersionKind, key render.ObjectKey) (health.Result, bool) {
	t.mu.Lock()
	a, ok := t.applied[key]
	t.mu.Unlock()
	if !ok || t.Live == nil {
		return health.Result{}, false
	}
	live, known := t.Live.Live(gvk, key.Namespace, key.Name)
	if !known {
		// Not watched: the health is read from the API server.
		return health.Result{}, false
	}
	if !observed(live, a) && time.Since(a.at) < unobservedGrace {
		return health.Result{State: health.Progressing, Message: "applied; waiting for the watch to show it"}, true
	}
	t.mu.Lock()
	if cur, ok := t.applied[key]; ok && cur == a {
		delete(t.applied, key)
	}
	t.mu.Unlock()
	return health.Result{}, false
}

// observed reports whether the cached live object is the one applied or
// newer: by resourceVersion where the API server's are comparable
// integers, else by UID and generation.
func observed(live *unstructured.Unstructured, a appliedObject) bool {
	if live == nil {
		return false
	}
	if c, err := resourceversion.CompareResourceVersion(live.GetResourceVersion(), a.resourceVersion); err == nil {
		return c >= 0
	}
	return live.GetUID() == a.uid && live.GetGeneration() >= a.generation
}

// observeWait bounds how long a reconcile waits for the watch to show
// what it applied before it sums up health (AwaitObserved).
const observeWait = time.Second

// observePoll is how often AwaitObserved looks at the informer's cache.
const observePoll = 5 * time.Millisecond

// AwaitObserved waits until the informer's cache holds every object of
// snap this process applied (Applied), at most observeWait: the watch is
// normally milliseconds behind an apply, and a summary made once it caught
// up speaks of the objects as applied (their health, their sync state).
// The reconcile then writes its status once, rather than once with its
// objects "applied; waiting for the watch to show it" and once more when
// the watch shows them. Past the wait the summary says Progressing for
// what is still not shown, as before. Nothing is read from the API server.
func (t *HealthTracker) AwaitObserved(ctx context.Context, snap *render.Snapshot) {
	if snap == nil || t.Live == nil {
		return
	}
	deadline := time.Now().Add(observeWait)
	for {
		pending := false
		for _, o := range snap.Objects {
			if _, waiting := t.unobserved(o.GVK(), o.Key); waiting {
				pending = true
				break
			}
		}
		if !pending || time.Now().After(deadline) {
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(observePoll):
		}
	}
}

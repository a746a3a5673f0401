package reconcile

import (
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/util/resourceversion"

	"github.com/driftguard/driftguard/api/v1alpha1"
)

// StatusWrites remembers the resourceVersion of the last status this
// process wrote to each Guard (a reconcile's, DriftStatus's), so that
// DriftStatus can tell whether its cached Guard already holds that write.
// When it does, a status that would come out the same is not written again:
// the reconcile that just wrote the Guard's drift, sync state and health
// costs one status write, not one more when the watch reports the objects
// it applied. When it does not yet, DriftStatus waits for the next period
// rather than send a patch that the API server refuses (its
// resourceVersion is stale). It also knows which Guards a reconcile is
// working on: their status is written by the reconcile, with the drift,
// sync state and health of the moment, so DriftStatus leaves them to it
// (for at most reconcileDefer). The zero value and nil are ready to use;
// nil remembers nothing (every change is written, as without it).
type StatusWrites struct {
	mu    sync.Mutex
	last  map[string]string    // guard -> resourceVersion of the last write
	since map[string]time.Time // guard -> when its running reconcile began
}

// reconcileDefer bounds how long DriftStatus leaves a Guard's status to
// its running reconcile: one that waits for a wave's health lets drift and
// health be written meanwhile.
const reconcileDefer = 10 * time.Second

// reconciling marks guard as being reconciled until the returned func is
// called.
func (w *StatusWrites) reconciling(guard string) func() {
	if w == nil {
		return func() {}
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.since == nil {
		w.since = map[string]time.Time{}
	}
	w.since[guard] = time.Now()
	return func() {
		w.mu.Lock()
		defer w.mu.Unlock()
		delete(w.since, guard)
	}
}

// leftToReconcile reports whether a reconcile of guard is running and
// began less than reconcileDefer ago: it will write the status.
func (w *StatusWrites) leftToReconcile(guard string) bool {
	if w == nil {
		return false
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	at, ok := w.since[guard]
	return ok && time.Since(at) < reconcileDefer
}

// wrote records a status write to guard that the API server stored as rv.
func (w *StatusWrites) wrote(guard, rv string) {
	if w == nil || rv == "" {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.last == nil {
		w.last = map[string]string{}
	}
	w.last[guard] = rv
}

// forget drops what is remembered of guard (deleted, or not ours).
func (w *StatusWrites) forget(guard string) {
	if w == nil {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	delete(w.last, guard)
}

// holds reports whether g (as read from a cache) holds the last status
// this process wrote to it, or something newer: known is false when no
// write is remembered or the resourceVersions cannot be compared.
func (w *StatusWrites) holds(g *v1alpha1.Guard) (known, holds bool) {
	if w == nil {
		return false, false
	}
	w.mu.Lock()
	rv, ok := w.last[g.Name]
	w.mu.Unlock()
	if !ok {
		return false, false
	}
	c, err := resourceversion.CompareResourceVersion(g.ResourceVersion, rv)
	if err != nil {
		return false, false
	}
	return true, c >= 0
}

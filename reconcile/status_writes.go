package reconcile

import (
	"sync"

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
// resourceVersion is stale). The zero value and nil are ready to use; nil
// remembers nothing (every change is written, as without it).
type StatusWrites struct {
	mu   sync.Mutex
	last map[string]string // guard -> resourceVersion of the last write
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

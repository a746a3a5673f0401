package reconcile

import (
	"sync"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"
)

// queuedTimes remembers when each Guard was last queued by an event on it
// (created, its spec or annotations changed) or a kick (a push, a health
// change it waits for), so that its next reconcile may resolve its
// revision with a ref listing begun since then (source.Request.ListingSince):
// a Guard queued before the listing began sees the remote as it was after
// it was queued, as with a listing of its own. Reconciles queued by
// their interval or an error retry have no time here and reuse listings
// only within ListingReuse.
type queuedTimes struct {
	mu sync.Mutex
	at map[string]time.Time
}

// note records that guard is being queued now; it is called before the
// name is added to the work queue.
func (q *queuedTimes) note(guard string) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.at == nil {
		q.at = map[string]time.Time{}
	}
	q.at[guard] = time.Now()
}

// noteObject is note as a predicate filter: it lets every object through.
func (q *queuedTimes) noteObject(o client.Object) bool {
	q.note(o.GetName())
	return true
}

// take returns and forgets when guard was queued; zero when no event or
// kick queued it since its last reconcile began. A time recorded after
// the reconcile was dequeued (an event while it waits to start) is later
// than the one that queued it: the listing is then newer than needed,
// never older.
func (q *queuedTimes) take(guard string) time.Time {
	q.mu.Lock()
	defer q.mu.Unlock()
	t := q.at[guard]
	delete(q.at, guard)
	return t
}

package reconcile

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestQueuedTimes: a Guard's reconcile takes the time an event or a kick
// queued it, once; one queued by nothing since (its interval, a retry)
// has none, so it reuses ref listings only within ListingReuse.
func TestQueuedTimes(t *testing.T) {
	var q queuedTimes
	if got := q.take("a"); !got.IsZero() {
		t.Fatalf("never queued: %v, want zero", got)
	}
	before := time.Now()
	if !q.noteObject(&metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Name: "a"}}) {
		t.Fatal("the predicate filtered the Guard out")
	}
	q.note("b")
	got := q.take("a")
	if got.Before(before) || got.After(time.Now()) {
		t.Fatalf("queued at %v, want between %v and now", got, before)
	}
	if again := q.take("a"); !again.IsZero() {
		t.Fatalf("taken twice: %v, want zero the second time", again)
	}
	// A later event replaces the earlier time: the listing must be newer.
	first := q.take("b")
	q.note("b")
	q.note("b")
	if later := q.take("b"); !later.After(first) && !later.Equal(first) {
		t.Fatalf("a later note %v is before the first %v", later, first)
	}
}

package reconcile

import (
	"context"
	"fmt"
	"testing"

	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// Every Guard asked for reaches the work queue once, however many come at
// once, and those asked for before the controller starts wait for it.
func TestKicksNeverDropped(t *testing.T) {
	for _, tc := range []struct {
		name          string
		before, after int // Guards kicked before and after the controller starts
	}{
		{"before the controller starts", 1000, 0},
		{"after it starts", 0, 1000},
		{"both, each Guard twice", 600, 600},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var k kicks
			q := workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[reconcile.Request]())
			defer q.ShutDown()
			for i := range tc.before {
				k.add(fmt.Sprintf("g%04d", i))
			}
			if err := k.source().Start(context.Background(), q); err != nil {
				t.Fatal(err)
			}
			for i := range tc.after {
				k.add(fmt.Sprintf("g%04d", i))
			}
			want := max(tc.before, tc.after)
			if q.Len() != want {
				t.Fatalf("%d Guards queued, want %d", q.Len(), want)
			}
		})
	}
}

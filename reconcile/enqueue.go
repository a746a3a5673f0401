package reconcile

import (
	"context"
	"sync"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"
)

// Enqueue asks for a full reconcile of a Guard now rather than at its next
// requeue: DriftStatus calls it when the health of a Guard that waits for
// it (spec.wait) changes, Pushed for every Guard of a pushed repository.
func (r *GuardReconciler) Enqueue(guard string) {
	r.queued.note(guard)
	r.kicks.add(guard)
}

// kicks hands Guard names to the controller's work queue. None is
// dropped, however many come at once (a push to a repository of 1,000
// Guards; a bounded channel lost all but its first 256 until their
// interval), and the queue holds each name once. Names that come before the
// controller starts (a follower's never does) wait, once each, until it
// does.
type kicks struct {
	mu      sync.Mutex
	queue   workqueue.TypedRateLimitingInterface[reconcile.Request]
	pending map[string]bool
}

func (k *kicks) add(guard string) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.queue != nil {
		k.queue.Add(request(guard))
		return
	}
	if k.pending == nil {
		k.pending = map[string]bool{}
	}
	k.pending[guard] = true
}

// source is the controller's source of kicks.
func (k *kicks) source() source.Source {
	return source.Func(func(_ context.Context, q workqueue.TypedRateLimitingInterface[reconcile.Request]) error {
		k.mu.Lock()
		defer k.mu.Unlock()
		k.queue = q
		for guard := range k.pending {
			q.Add(request(guard))
		}
		k.pending = nil
		return nil
	})
}

func request(guard string) reconcile.Request {
	return reconcile.Request{NamespacedName: types.NamespacedName{Name: guard}}
}

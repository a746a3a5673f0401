package reconcile

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/event"

	"github.com/driftguard/driftguard/api/v1alpha1"
)

// Enqueue asks for a full reconcile of a Guard now rather than at its next
// requeue: DriftStatus calls it when the health of a Guard that waits for
// it (spec.wait) changes. It does nothing before SetupWithManager, and
// drops the request when the queue of such requests is full.
func (r *GuardReconciler) Enqueue(guard string) {
	if r.pushes == nil {
		return
	}
	select {
	case r.pushes <- event.GenericEvent{Object: &v1alpha1.Guard{ObjectMeta: metav1.ObjectMeta{Name: guard}}}:
	default:
	}
}

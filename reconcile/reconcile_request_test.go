package reconcile

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/driftguard/driftguard/api/v1alpha1"
)

// TestHandledReconcileRequest: which reconcile request a reconcile records
// as handled (driftguard reconcile waits for it).
func TestHandledReconcileRequest(t *testing.T) {
	for _, tt := range []struct {
		name        string
		annotations map[string]string
		suspend     bool
		before      string
		want        string
	}{
		{"no request", nil, false, "", ""},
		{"a new request", map[string]string{v1alpha1.ReconcileRequestedAnnotation: "t2"}, false, "t1", "t2"},
		{"the same request again", map[string]string{v1alpha1.ReconcileRequestedAnnotation: "t1"}, false, "t1", "t1"},
		{"suspended: waits for resume", map[string]string{v1alpha1.ReconcileRequestedAnnotation: "t2"}, true, "t1", "t1"},
		{"a sync request is not a reconcile request", map[string]string{v1alpha1.SyncRequestedAnnotation: "t2"}, false, "t1", "t1"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			g := &v1alpha1.Guard{ObjectMeta: metav1.ObjectMeta{Name: "shop", Annotations: tt.annotations}}
			g.Spec.Suspend = tt.suspend
			g.Status.LastHandledReconcileAt = tt.before
			handledReconcileRequest(g)
			if g.Status.LastHandledReconcileAt != tt.want {
				t.Errorf("lastHandledReconcileAt = %q, want %q", g.Status.LastHandledReconcileAt, tt.want)
			}
		})
	}
}

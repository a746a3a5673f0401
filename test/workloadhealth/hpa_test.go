package workloadhealth

import (
	"context"
	"fmt"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/driftguard/driftguard/api/v1alpha1"
	"github.com/driftguard/driftguard/audit"
	"github.com/driftguard/driftguard/test/wait"
)

// A HorizontalPodAutoscaler of the simulated cluster's controller manager
// scales a Deployment Git declares with one replica up to its minimum of 3.
// With the ignore rule the docs give for it (the controller manager's
// fields), the guard neither counts that as drift nor takes it back, and
// records nothing.
func TestAutoscalerKeepsWorking(t *testing.T) {
	t.Parallel()
	const ns, guard = "hd-hpa", "hd-hpa"
	hpa := fmt.Sprintf(`apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata:
  name: web
  namespace: %s
spec:
  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: web}
  minReplicas: 3
  maxReplicas: 5
  metrics:
    - type: Resource
      resource: {name: cpu, target: {type: Utilization, averageUtilization: 80}}
`, ns)
	repo := h.NewGuard(t, guard, true, map[string]string{
		"namespace.yaml":  namespace(ns),
		"deployment.yaml": deployment(ns, "web", "nginx:1.27", 1, 0, ""),
		"hpa.yaml":        hpa,
	}, func(s *v1alpha1.GuardSpec) {
		s.Ignore = []v1alpha1.IgnoreRule{{Group: "apps", Kind: "Deployment", ManagedFieldsManagers: []string{"kube-controller-manager"}}}
	})
	h.WaitApplied(t, repo.Guard, repo.Initial)
	replicas := func() (int32, error) {
		var d appsv1.Deployment
		if err := h.Admin.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "web"}, &d); err != nil {
			return 0, err
		}
		return *d.Spec.Replicas, nil
	}
	wait.Eventually(t, 90*time.Second, "the autoscaler scales to its minimum", func() error {
		if n, err := replicas(); err != nil || n != 3 {
			return fmt.Errorf("replicas %d (%v)", n, err)
		}
		return nil
	})
	// Two full reconciles later it is still the autoscaler's.
	h.WaitReconciles(t, repo.Guard, 3)
	if n, err := replicas(); err != nil || n != 3 {
		t.Fatalf("replicas %d (%v) after reconciles: the guard took the autoscaler's change back", n, err)
	}
	if recs := h.Audit.Find(func(r audit.Record) bool {
		return r.Guard == repo.Guard && (r.Type == audit.Drift || r.Type == audit.Revert) && r.Object.Kind == "Deployment"
	}); len(recs) > 0 {
		t.Fatalf("the autoscaler's change was recorded as drift: %+v", recs[0])
	}
}

package workloadhealth

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/driftguard/driftguard/api/v1alpha1"
	"github.com/driftguard/driftguard/health"
	"github.com/driftguard/driftguard/test/wait"
)

func service(ns, name string) string {
	return `apiVersion: v1
kind: Service
metadata:
  name: ` + name + `
  namespace: ` + ns + `
spec:
  selector:
    app: ` + name + `
  ports:
    - port: 80
`
}

// A new Deployment (and its Service) goes Progressing → Healthy in the
// Guard's status, and a new image Progressing → Healthy again. The Guard's
// interval is an hour: after the apply, its health follows the informer
// alone, without another full reconcile.
func TestDeploymentRollout(t *testing.T) {
	t.Parallel()
	const ns, guard = "hd-rollout", "hd-rollout"
	rec := record(t, guard)
	repo := h.NewGuard(t, guard, true, map[string]string{
		"namespace.yaml":  namespace(ns),
		"deployment.yaml": deployment(ns, "web", "nginx:1.27", 2, 2, ""),
		"service.yaml":    service(ns, "web"),
	}, func(s *v1alpha1.GuardSpec) { s.Interval = metav1.Duration{Duration: time.Hour} })

	applied := rec.await(t, 0, 60*time.Second, "first revision applied", func(s step) bool { return s.Rev == repo.Initial && s.Ready == "True" })
	var n float64
	wait.Eventually(t, 10*time.Second, "first reconcile counted", func() error {
		if n = reconciles(t, guard); n < 1 {
			return errNotYet
		}
		return nil
	})
	healthy := rec.await(t, applied, 60*time.Second, "Healthy", func(s step) bool { return s.Health == string(health.Healthy) })
	seq := rec.healths(0, healthy+1)
	t.Logf("new Deployment: status.health went %s", strings.Join(seq, " → "))
	if !slices.Contains(seq, string(health.Progressing)) {
		t.Errorf("status.health went %v: want Progressing before Healthy", seq)
	}
	if err := rolledOut(context.Background(), ns, "web", "nginx:1.27"); err != nil {
		t.Errorf("the Guard says Healthy but %v", err)
	}
	if got := reconciles(t, guard); got != n {
		t.Errorf("%v full reconciles until Healthy, want %v: the informer should carry health between reconciles", got, n)
	}
	if s := rec.snapshot()[healthy]; s.Healthy != "True" || len(s.Unhealthy) != 0 {
		t.Errorf("Healthy in status.health but %s", s)
	}

	// A new image: Progressing while the Deployment rolls out, then Healthy.
	rev := repo.Change(t, "web: nginx 1.28", map[string]string{"deployment.yaml": deployment(ns, "web", "nginx:1.28", 2, 2, "")})
	mark := len(rec.snapshot())
	requestSync(t, guard)
	progressing := rec.await(t, mark, 60*time.Second, "new image Progressing", func(s step) bool { return s.Rev == rev && s.Health == string(health.Progressing) })
	if s := rec.snapshot()[progressing]; s.Healthy != "False" || !strings.Contains(strings.Join(s.Unhealthy, ";"), "Deployment hd-rollout/web") {
		t.Errorf("Progressing in status.health but %s", s)
	}
	healthy = rec.await(t, progressing, 60*time.Second, "new image Healthy", func(s step) bool { return s.Rev == rev && s.Health == string(health.Healthy) })
	if err := rolledOut(context.Background(), ns, "web", "nginx:1.28"); err != nil {
		t.Errorf("the Guard says Healthy but %v", err)
	}
	t.Logf("image change: status.health went %s", strings.Join(rec.healths(mark, healthy+1), " → "))
	if s := rec.snapshot()[healthy]; s.Healthy != "True" || len(s.Unhealthy) != 0 {
		t.Errorf("Healthy in status.health but %s", s)
	}
}

// A Deployment whose pods no node can take ends Degraded once its progress
// deadline passes; with spec.wait the Guard is Ready=False Progressing
// meanwhile, and HealthCheckFailed after spec.timeout.
func TestUnschedulableDeploymentDegraded(t *testing.T) {
	t.Parallel()
	const ns, guard = "hd-unschedulable", "hd-unschedulable"
	rec := record(t, guard)
	d := deployment(ns, "stuck", "nginx:1.27", 1, 0, "      nodeSelector:\n        example.com/no-such-node: \"true\"\n")
	d = strings.Replace(d, "  minReadySeconds: 0\n", "  minReadySeconds: 0\n  progressDeadlineSeconds: 10\n", 1)
	h.NewGuard(t, guard, true, map[string]string{"namespace.yaml": namespace(ns), "deployment.yaml": d}, func(s *v1alpha1.GuardSpec) {
		s.Interval = metav1.Duration{Duration: time.Hour}
		s.Wait = true
		s.Timeout = &metav1.Duration{Duration: 25 * time.Second}
	})

	waiting := rec.await(t, 0, 60*time.Second, "Ready=False Progressing while it waits", func(s step) bool {
		return s.Ready == "False" && s.Reason == v1alpha1.ReasonProgressing && s.Health == string(health.Progressing)
	})
	degraded := rec.await(t, waiting, 60*time.Second, "Degraded after the progress deadline", func(s step) bool { return s.Health == string(health.Degraded) })
	s := rec.snapshot()[degraded]
	if !strings.Contains(strings.Join(s.Unhealthy, ";"), "progress deadline exceeded") || s.Healthy != "False" {
		t.Errorf("Degraded but %s", s)
	}
	rec.await(t, degraded, 60*time.Second, "HealthCheckFailed after the timeout", func(s step) bool {
		return s.Ready == "False" && s.Reason == v1alpha1.ReasonHealthCheckFailed && s.Health == string(health.Degraded)
	})
	t.Logf("unschedulable Deployment: status.health went %s", strings.Join(rec.healths(0, len(rec.snapshot())), " → "))
	expectEvent(t, guard, "HealthDegraded", "progress deadline exceeded")
	expectEvent(t, guard, v1alpha1.ReasonHealthCheckFailed, "not healthy within 25s")
}

// With spec.wait, a new image keeps the Guard Ready=False Progressing until
// the Deployment has rolled it out: the health summed up right after the
// apply must not be the informer's answer about the old Deployment.
func TestWaitHoldsImageChange(t *testing.T) {
	t.Parallel()
	const ns, guard = "hd-wait", "hd-wait"
	rec := record(t, guard)
	// No prune: nothing between the apply and the health summary.
	repo := h.NewGuard(t, guard, false, map[string]string{
		"namespace.yaml":  namespace(ns),
		"deployment.yaml": deployment(ns, "api", "nginx:1.27", 2, 3, ""),
	}, func(s *v1alpha1.GuardSpec) {
		s.Interval = metav1.Duration{Duration: time.Hour}
		s.Wait = true
		s.Timeout = &metav1.Duration{Duration: 2 * time.Minute}
	})
	rec.await(t, 0, 60*time.Second, "first revision Ready and Healthy", func(s step) bool {
		return s.Rev == repo.Initial && s.Ready == "True" && s.Health == string(health.Healthy)
	})
	rev := repo.Change(t, "api: nginx 1.28", map[string]string{"deployment.yaml": deployment(ns, "api", "nginx:1.28", 2, 3, "")})
	mark := len(rec.snapshot())
	requestSync(t, guard)
	ready := rec.await(t, mark, 60*time.Second, "new image Ready", func(s step) bool { return s.Rev == rev && s.Ready == "True" })
	if err := rolledOut(context.Background(), ns, "api", "nginx:1.28"); err != nil {
		t.Errorf("the Guard is Ready at the new image but %v", err)
	}
	held := false
	for _, s := range rec.snapshot()[mark:ready] {
		if s.Rev == rev && s.Ready == "False" && s.Reason == v1alpha1.ReasonProgressing {
			held = true
		}
	}
	if !held {
		t.Errorf("the Guard was never Ready=False Progressing during the rollout")
	}
	if s := rec.snapshot()[ready]; s.Health != string(health.Healthy) || s.Healthy != "True" {
		t.Errorf("Ready but %s", s)
	}
}

package workloadhealth

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/driftguard/driftguard/api/v1alpha1"
	"github.com/driftguard/driftguard/health"
	"github.com/driftguard/driftguard/test/wait"
)

// Guard B depends on Guard A, which waits for its Deployment: A stays
// Ready=False Progressing during the rollout, and B applies nothing (its
// objects do not exist) until A is Ready and Healthy.
func TestWaitAndDependsOn(t *testing.T) {
	t.Parallel()
	const a, b = "hd-dep-a", "hd-dep-b"
	recA, recB := record(t, a), record(t, b)
	ctx := context.Background()
	// B first: it must wait for A even though it exists first.
	h.NewGuard(t, b, true, map[string]string{
		"namespace.yaml": namespace(b),
		"configmap.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: after-a\n  namespace: " + b + "\ndata:\n  k: v\n",
	}, func(s *v1alpha1.GuardSpec) { s.DependsOn = []string{a} })
	recB.await(t, 0, 30*time.Second, "B waits for A", func(s step) bool {
		return s.Ready == "False" && s.Reason == v1alpha1.ReasonDependencyNotReady
	})
	h.NewGuard(t, a, true, map[string]string{
		"namespace.yaml":  namespace(a),
		"deployment.yaml": deployment(a, "db", "postgres:17", 2, 4, ""),
	}, func(s *v1alpha1.GuardSpec) { s.Wait = true; s.Timeout = &metav1.Duration{Duration: 2 * time.Minute} })

	// Until A is Ready and Healthy, B's objects do not exist. The
	// ConfigMap is read before A, so a ConfigMap that exists while A,
	// read after it, is not ready is a violation.
	var bObjectsAt time.Time
	wait.Eventually(t, 90*time.Second, "A Ready and Healthy", func() error {
		var cm corev1.ConfigMap
		err := h.Admin.Get(ctx, client.ObjectKey{Namespace: b, Name: "after-a"}, &cm)
		switch {
		case err == nil:
			bObjectsAt = cm.CreationTimestamp.Time
		case !apierrors.IsNotFound(err):
			return err
		}
		ga := h.Guard(t, a)
		ready := meta.IsStatusConditionTrue(ga.Status.Conditions, v1alpha1.ConditionReady)
		if ready && ga.Status.Health == string(health.Healthy) {
			return nil
		}
		if err == nil {
			t.Fatalf("B's ConfigMap exists (created %s) while A is not Ready and Healthy: %+v", cm.CreationTimestamp, ga.Status)
		}
		return fmt.Errorf("A: health %q, conditions %+v", ga.Status.Health, ga.Status.Conditions)
	})
	ga := h.Guard(t, a)
	aReady := meta.FindStatusCondition(ga.Status.Conditions, v1alpha1.ConditionReady).LastTransitionTime.Time
	if err := rolledOut(ctx, a, "db", "postgres:17"); err != nil {
		t.Errorf("A is Ready and Healthy but %v", err)
	}
	// A held itself at Ready=False Progressing during the rollout.
	steps := recA.snapshot()
	heldA := false
	for _, s := range steps {
		if s.Ready == "False" && s.Reason == v1alpha1.ReasonProgressing && s.Health != string(health.Healthy) {
			heldA = true
		}
		if s.Ready == "True" && s.Health != string(health.Healthy) {
			t.Errorf("A was Ready before it was Healthy (spec.wait): %s", s)
		}
	}
	if !heldA {
		t.Errorf("A was never Ready=False Progressing while it waited:\n%s", recA)
	}
	// Then B applies.
	recB.await(t, 0, 60*time.Second, "B Ready", func(s step) bool { return s.Ready == "True" && s.Rev != "" })
	if bObjectsAt.IsZero() {
		var cm corev1.ConfigMap
		if err := h.Admin.Get(ctx, client.ObjectKey{Namespace: b, Name: "after-a"}, &cm); err != nil {
			t.Fatal(err)
		}
		bObjectsAt = cm.CreationTimestamp.Time
	}
	t.Logf("A Ready (and Healthy) at %s; B's ConfigMap created at %s", aReady.Format(time.RFC3339), bObjectsAt.Format(time.RFC3339))
	if bObjectsAt.Before(aReady) {
		t.Errorf("B's objects were created at %s, before A was Ready at %s", bObjectsAt, aReady)
	}
	var waitMsg string
	for _, s := range recB.snapshot() {
		if s.Reason == v1alpha1.ReasonDependencyNotReady {
			waitMsg = s.String()
		}
	}
	if !strings.Contains(waitMsg, v1alpha1.ReasonDependencyNotReady) {
		t.Errorf("B never reported DependencyNotReady:\n%s", recB)
	}
}

// A dependsOn cycle is Stalled with reason DependencyCycle; once the other
// Guard drops it, the Guard applies.
func TestDependsOnCycle(t *testing.T) {
	t.Parallel()
	h.NewGuard(t, "hd-cycle-x", true, map[string]string{"namespace.yaml": namespace("hd-cycle-x")}, func(s *v1alpha1.GuardSpec) { s.DependsOn = []string{"hd-cycle-y"} })
	h.NewGuard(t, "hd-cycle-y", true, map[string]string{"namespace.yaml": namespace("hd-cycle-y")}, func(s *v1alpha1.GuardSpec) { s.DependsOn = []string{"hd-cycle-x"} })
	for _, name := range []string{"hd-cycle-x", "hd-cycle-y"} {
		wait.Eventually(t, 30*time.Second, name+" stalled on the cycle", func() error {
			g := h.Guard(t, name)
			st := meta.FindStatusCondition(g.Status.Conditions, v1alpha1.ConditionStalled)
			if st == nil || st.Status != metav1.ConditionTrue || st.Reason != v1alpha1.ReasonDependencyCycle || !strings.Contains(st.Message, "hd-cycle-x → hd-cycle-y") && !strings.Contains(st.Message, "hd-cycle-y → hd-cycle-x") {
				return fmt.Errorf("conditions %+v", g.Status.Conditions)
			}
			return nil
		})
	}
	y := h.Guard(t, "hd-cycle-y")
	y.Spec.DependsOn = nil
	if err := h.Admin.Update(context.Background(), y); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"hd-cycle-y", "hd-cycle-x"} {
		wait.Eventually(t, 30*time.Second, name+" Ready once the cycle is broken", func() error {
			g := h.Guard(t, name)
			if !meta.IsStatusConditionTrue(g.Status.Conditions, v1alpha1.ConditionReady) || meta.IsStatusConditionTrue(g.Status.Conditions, v1alpha1.ConditionStalled) {
				return fmt.Errorf("conditions %+v", g.Status.Conditions)
			}
			return nil
		})
	}
}

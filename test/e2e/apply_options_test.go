package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/driftguard/driftguard/api/v1alpha1"
	"github.com/driftguard/driftguard/audit"
	"github.com/driftguard/driftguard/test/wait"
)

func job(ns, name, image string, annotations string) string {
	return fmt.Sprintf(`apiVersion: batch/v1
kind: Job
metadata:
  name: %s
  namespace: %s
%s
spec:
  template:
    spec:
      restartPolicy: Never
      containers:
      - name: main
        image: %s
`, name, ns, annotations, image)
}

// TestForceReplacesImmutableChanges: a Job's template cannot change; with
// the force annotation in Git the Job is recreated, without it the Guard
// reports the object as failed and keeps the rest applied.
func TestForceReplacesImmutableChanges(t *testing.T) {
	t.Parallel()
	const ns = "force"
	forced := "  annotations:\n    driftguard.io/force: \"true\""
	repo := h.NewGuard(t, "force", true, map[string]string{
		"ns.yaml":     namespace(ns),
		"forced.yaml": job(ns, "forced", "busybox:1", forced),
		"plain.yaml":  job(ns, "plain", "busybox:1", ""),
		"cm.yaml":     configMap(ns, "cm", "one"),
	}, func(s *v1alpha1.GuardSpec) {
		s.Retry = &v1alpha1.RetryPolicy{Limit: 2, Backoff: &v1alpha1.Backoff{Duration: &metav1.Duration{Duration: 500 * time.Millisecond}}}
	})
	h.WaitApplied(t, repo.Guard, repo.Initial)
	var before batchv1.Job
	if err := h.Admin.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "forced"}, &before); err != nil {
		t.Fatal(err)
	}

	repo.Change(t, "new images", map[string]string{
		"forced.yaml": job(ns, "forced", "busybox:2", forced),
		"plain.yaml":  job(ns, "plain", "busybox:2", ""),
		"cm.yaml":     configMap(ns, "cm", "two"),
	})
	// The Job with the annotation is replaced: a new object with the new image.
	wait.Eventually(t, 60*time.Second, "forced job replaced", func() error {
		var j batchv1.Job
		if err := h.Admin.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "forced"}, &j); err != nil {
			return err
		}
		if j.UID == before.UID || j.Spec.Template.Spec.Containers[0].Image != "busybox:2" {
			return fmt.Errorf("uid %s image %s", j.UID, j.Spec.Template.Spec.Containers[0].Image)
		}
		return nil
	})
	h.Audit.Wait(t, 10*time.Second, "replaced record", func(r audit.Record) bool {
		return r.Guard == repo.Guard && r.Object.Name == "forced" && r.Action == "replaced"
	})
	waitValue(t, ns, "cm", "two")
	// The other Job fails; the Guard says which, and after the retry limit it is Stalled.
	g := waitCondition(t, repo.Guard, v1alpha1.ConditionStalled, metav1.ConditionTrue, v1alpha1.ReasonPartiallySynced, "gave up after 2 retries")
	if len(g.Status.Failed) != 1 || g.Status.Failed[0].Kind != "Job" || g.Status.Failed[0].Name != "plain" || !strings.Contains(g.Status.Failed[0].Error, "plain.yaml") {
		t.Fatalf("status.failed = %+v, want the plain Job with its file", g.Status.Failed)
	}
	var plain batchv1.Job
	if err := h.Admin.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "plain"}, &plain); err != nil || plain.Spec.Template.Spec.Containers[0].Image != "busybox:1" {
		t.Fatalf("the plain Job must stay as it was: %v", err)
	}

	// A new revision tries again: Git fixes it by adding the annotation.
	fixed := repo.Change(t, "force plain too", map[string]string{"plain.yaml": job(ns, "plain", "busybox:2", forced)})
	h.WaitApplied(t, repo.Guard, fixed)
}

// TestCRDAndItsObjectsInOneRevision: the definition is applied and
// established before the objects of its kind.
func TestCRDAndItsObjectsInOneRevision(t *testing.T) {
	t.Parallel()
	const ns = "crd-stage"
	crd := `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: widgets.stage.example.com
spec:
  group: stage.example.com
  names: {kind: Widget, plural: widgets, singular: widget, listKind: WidgetList}
  scope: Namespaced
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            x-kubernetes-preserve-unknown-fields: true
`
	widget := `apiVersion: stage.example.com/v1
kind: Widget
metadata:
  name: w
  namespace: crd-stage
spec:
  size: 3
`
	// File order puts the Widget first: staging must not depend on it.
	repo := h.NewGuard(t, "crd-stage", true, map[string]string{"a-widget.yaml": widget, "b-ns.yaml": namespace(ns), "c-crd.yaml": crd})
	h.WaitApplied(t, repo.Guard, repo.Initial)
	if g := h.Guard(t, repo.Guard); g.Status.Retries != 0 {
		t.Fatalf("the first reconcile must apply everything, retries = %d", g.Status.Retries)
	}
	u := &unstructured.Unstructured{}
	u.SetAPIVersion("stage.example.com/v1")
	u.SetKind("Widget")
	if err := h.Admin.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "w"}, u); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = h.Admin.Delete(context.Background(), &unstructured.Unstructured{Object: map[string]any{"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition", "metadata": map[string]any{"name": "widgets.stage.example.com"}}})
	})
}

// TestPartialFailureRetriesWithBackoff: an object the API server rejects
// does not hold back the others; the Guard retries, counting in status.
func TestPartialFailureRetriesWithBackoff(t *testing.T) {
	t.Parallel()
	const ns = "partial"
	bad := `apiVersion: v1
kind: Service
metadata:
  name: bad
  namespace: partial
spec:
  ports:
  - port: 700000
`
	repo := h.NewGuard(t, "partial", true, map[string]string{"ns.yaml": namespace(ns), "cm.yaml": configMap(ns, "cm", "one"), "svc.yaml": bad},
		func(s *v1alpha1.GuardSpec) {
			s.Retry = &v1alpha1.RetryPolicy{Backoff: &v1alpha1.Backoff{Duration: &metav1.Duration{Duration: time.Second}}}
		})
	g := waitCondition(t, repo.Guard, v1alpha1.ConditionReady, metav1.ConditionFalse, v1alpha1.ReasonPartiallySynced, "1 of 3 objects failed")
	waitValue(t, ns, "cm", "one")
	if len(g.Status.Failed) != 1 || !strings.Contains(g.Status.Failed[0].Error, "svc.yaml") {
		t.Fatalf("status.failed = %+v", g.Status.Failed)
	}
	wait.Eventually(t, 30*time.Second, "retried", func() error {
		if g := h.Guard(t, repo.Guard); g.Status.Retries < 2 {
			return fmt.Errorf("retries %d", g.Status.Retries)
		}
		return nil
	})
	fixed := repo.Change(t, "fix the port", map[string]string{"svc.yaml": strings.Replace(bad, "700000", "80", 1)})
	g = h.WaitApplied(t, repo.Guard, fixed)
	if g.Status.Retries != 0 || len(g.Status.Failed) != 0 {
		t.Fatalf("after the fix: retries %d failed %+v", g.Status.Retries, g.Status.Failed)
	}
	var svc corev1.Service
	if err := h.Admin.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "bad"}, &svc); err != nil {
		t.Fatal(err)
	}
}

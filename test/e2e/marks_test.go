package e2e

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/driftguard/driftguard/api/v1alpha1"
	"github.com/driftguard/driftguard/apply"
	"github.com/driftguard/driftguard/health"
	"github.com/driftguard/driftguard/test/wait"
)

// TestJobKeepsServerDefaultedLabels: a Job Git gives no labels carries,
// applied by a Guard, the labels the API server gives such a Job (the
// job-name and controller-uid labels of its pod template), so that
// kubectl get jobs -l batch.kubernetes.io/job-name=... finds it, besides
// the inventory label; a ReplicationController gets its template's labels.
// The Job stays guarded: with enforcement warn, a person's change is
// decided at admission (admitted with the guard's warning) and reverted.
func TestJobKeepsServerDefaultedLabels(t *testing.T) {
	t.Parallel()
	const ns = "marks"
	rc := `apiVersion: v1
kind: ReplicationController
metadata:
  name: legacy
  namespace: marks
spec:
  replicas: 0
  template:
    metadata:
      labels: {app: legacy}
    spec:
      containers: [{name: main, image: nginx}]
`
	labelled := `apiVersion: batch/v1
kind: Job
metadata:
  name: labelled
  namespace: marks
  labels: {team: db}
spec:
  template:
    spec:
      restartPolicy: Never
      containers: [{name: main, image: busybox}]
`
	repo := h.NewGuard(t, "marks", true, map[string]string{"ns.yaml": namespace(ns), "job.yaml": job(ns, "migrate", "busybox", ""),
		"labelled.yaml": labelled, "rc.yaml": rc},
		func(s *v1alpha1.GuardSpec) { s.Enforcement = v1alpha1.EnforcementWarn })
	h.WaitApplied(t, repo.Guard, repo.Initial)

	out, err := h.Kubectl(t, "get", "jobs", "-n", ns, "-l", "batch.kubernetes.io/job-name=migrate", "-o", "name")
	if err != nil || strings.TrimSpace(out) != "job.batch/migrate" {
		t.Fatalf("kubectl get jobs -l batch.kubernetes.io/job-name=migrate: %v %q", err, out)
	}
	var j batchv1.Job
	if err := h.Admin.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "migrate"}, &j); err != nil {
		t.Fatal(err)
	}
	uid := string(j.UID)
	for k, v := range map[string]string{apply.JobNameLabel: "migrate", apply.LegacyJobNameLabel: "migrate",
		apply.ControllerUIDLabel: uid, apply.LegacyControllerUIDLabel: uid, apply.GuardLabel: repo.Guard} {
		if j.Labels[k] != v {
			t.Fatalf("Job label %s = %q, want %q (labels %v)", k, j.Labels[k], v, j.Labels)
		}
	}
	// The labels are the server's own: the same as its pod template's.
	for _, k := range []string{apply.JobNameLabel, apply.ControllerUIDLabel} {
		if j.Spec.Template.Labels[k] != j.Labels[k] {
			t.Fatalf("Job label %s = %q, its template's %q", k, j.Labels[k], j.Spec.Template.Labels[k])
		}
	}
	// A Job Git labels gets no labels from its template: the server does
	// not default them either.
	if err := h.Admin.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "labelled"}, &j); err != nil {
		t.Fatal(err)
	}
	if _, ok := j.Labels[apply.JobNameLabel]; ok || j.Labels["team"] != "db" {
		t.Fatalf("a Job labelled in Git: labels %v", j.Labels)
	}
	out, err = h.Kubectl(t, "get", "rc", "-n", ns, "-l", "app=legacy", "-o", "name")
	if err != nil || strings.TrimSpace(out) != "replicationcontroller/legacy" {
		t.Fatalf("kubectl get rc -l app=legacy: %v %q", err, out)
	}

	// Guarded: the webhook decides alice's removal of the label, and the
	// drift watcher puts it back.
	out, err = h.Kubectl(t, "label", "job", "migrate", "-n", ns, apply.JobNameLabel+"-")
	if err != nil || !strings.Contains(out, "Warning:") || !strings.Contains(out, "managed by Git") {
		t.Fatalf("alice's label removal must be decided by the webhook (warn): %v %s", err, out)
	}
	wait.Eventually(t, 30*time.Second, "job-name label put back", func() error {
		if err := h.Admin.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "migrate"}, &j); err != nil {
			return err
		}
		if j.Labels[apply.JobNameLabel] != "migrate" || j.Labels[apply.ControllerUIDLabel] != uid {
			return fmt.Errorf("labels %v", j.Labels)
		}
		return nil
	})
}

// TestPartiallySyncedShowsWhatIsGuarded: a Guard one of whose objects the
// API server refuses reports the objects it applied, their kinds and their
// health (the refused one Missing), and they are guarded.
func TestPartiallySyncedShowsWhatIsGuarded(t *testing.T) {
	t.Parallel()
	const ns = "partial-status"
	bad := `apiVersion: v1
kind: Service
metadata:
  name: bad
  namespace: partial-status
spec:
  ports:
  - port: 700000
`
	repo := h.NewGuard(t, "partial-status", true, map[string]string{"ns.yaml": namespace(ns), "cm.yaml": configMap(ns, "cm", "one"), "svc.yaml": bad},
		func(s *v1alpha1.GuardSpec) { s.Enforcement = v1alpha1.EnforcementWarn })
	waitCondition(t, repo.Guard, v1alpha1.ConditionReady, metav1.ConditionFalse, v1alpha1.ReasonPartiallySynced, "1 of 3 objects failed")
	var g *v1alpha1.Guard
	wait.Eventually(t, 30*time.Second, "status of what is applied", func() error {
		g = h.Guard(t, repo.Guard)
		var kinds []string
		for _, k := range g.Status.Inventory {
			kinds = append(kinds, k.Kind)
		}
		switch {
		case g.Status.ManagedObjects != 2:
			return fmt.Errorf("managedObjects %d, want 2", g.Status.ManagedObjects)
		case !slices.Contains(kinds, "Namespace") || !slices.Contains(kinds, "ConfigMap"):
			return fmt.Errorf("inventory %v", kinds)
		case g.Status.Health != string(health.Missing) || len(g.Status.Unhealthy) != 1 || g.Status.Unhealthy[0].Name != "bad":
			return fmt.Errorf("health %q unhealthy %+v", g.Status.Health, g.Status.Unhealthy)
		}
		return nil
	})
	if g.Status.LastAppliedRevision != "" {
		t.Fatalf("lastAppliedRevision %q: no revision is applied whole", g.Status.LastAppliedRevision)
	}
	out, err := h.Kubectl(t, append([]string{"patch", "configmap", "cm", "-n", ns}, patchValue("by alice")...)...)
	if err != nil || !strings.Contains(out, "Warning:") || !strings.Contains(out, "managed by Git") {
		t.Fatalf("a change to an applied object of a PartiallySynced Guard must be decided by the webhook (warn): %v %s", err, out)
	}
	waitValue(t, ns, "cm", "one")
}

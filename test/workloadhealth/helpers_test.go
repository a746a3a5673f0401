package workloadhealth

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/driftguard/driftguard/api/v1alpha1"
	"github.com/driftguard/driftguard/test/wait"
)

// requestSync asks for a reconcile of the Guard now, as driftguard sync does
// (its interval may be an hour).
func requestSync(t *testing.T, guard string) {
	t.Helper()
	body, _ := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]string{
		v1alpha1.SyncRequestedAnnotation: time.Now().Format(time.RFC3339Nano),
	}}})
	g := &v1alpha1.Guard{}
	g.Name = guard
	if err := h.Admin.Patch(context.Background(), g, client.RawPatch(types.MergePatchType, body)); err != nil {
		t.Fatalf("request a sync of %s: %v", guard, err)
	}
}

// reconciles counts the full reconciles of a Guard so far, from the
// guard's driftguard_sync_total metric (the guard runs in this process).
func reconciles(t *testing.T, guard string) float64 {
	t.Helper()
	families, err := metrics.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var n float64
	for _, f := range families {
		if f.GetName() != "driftguard_sync_total" {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "guard" && l.GetValue() == guard {
					n += m.GetCounter().GetValue()
				}
			}
		}
	}
	return n
}

// rolledOut says why the Deployment has not finished rolling out image,
// or returns nil once it has: the controller saw its generation, every
// replica runs image, is updated and available, and no old one is left.
func rolledOut(ctx context.Context, namespace, name, image string) error {
	var d appsv1.Deployment
	if err := h.Admin.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, &d); err != nil {
		return err
	}
	want := int32(1)
	if d.Spec.Replicas != nil {
		want = *d.Spec.Replicas
	}
	st := d.Status
	var images []string
	for _, c := range d.Spec.Template.Spec.Containers {
		images = append(images, c.Image)
	}
	if strings.Join(images, ",") != image || st.ObservedGeneration != d.Generation || st.UpdatedReplicas != want ||
		st.Replicas != want || st.AvailableReplicas != want || st.ReadyReplicas != want {
		return fmt.Errorf("deployment %s/%s (image %s, generation %d) not rolled out: %+v", namespace, name, images, d.Generation, st)
	}
	return nil
}

// deployment is a Deployment of replicas pods of image in namespace ns.
// minReadySeconds keeps it Progressing that long after its pods are Ready
// (KWOK makes them Ready at once), so every test sees the rollout.
func deployment(ns, name, image string, replicas, minReadySeconds int, extra string) string {
	return fmt.Sprintf(`apiVersion: apps/v1
kind: Deployment
metadata:
  name: %[2]s
  namespace: %[1]s
spec:
  replicas: %[4]d
  minReadySeconds: %[5]d
  selector:
    matchLabels:
      app: %[2]s
  template:
    metadata:
      labels:
        app: %[2]s
    spec:
      containers:
        - name: app
          image: %[3]s
%[6]s`, ns, name, image, replicas, minReadySeconds, extra)
}

func namespace(ns string) string {
	return fmt.Sprintf("apiVersion: v1\nkind: Namespace\nmetadata:\n  name: %s\n", ns)
}

var errNotYet = fmt.Errorf("not yet")

// expectEvent waits for an Event on the Guard with reason and a note
// containing substr.
func expectEvent(t *testing.T, guard, reason, substr string) {
	t.Helper()
	wait.Eventually(t, 30*time.Second, fmt.Sprintf("event %s on guard %s", reason, guard), func() error {
		var list eventsv1.EventList
		if err := h.Admin.List(context.Background(), &list, client.MatchingFields{"regarding.name": guard}); err != nil {
			return err
		}
		var seen []string
		for _, e := range list.Items {
			if e.Regarding.Kind != "Guard" {
				continue
			}
			if e.Reason == reason && strings.Contains(e.Note, substr) {
				return nil
			}
			seen = append(seen, e.Reason+": "+e.Note)
		}
		return fmt.Errorf("events: %q", seen)
	})
}

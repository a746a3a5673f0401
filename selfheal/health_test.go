package selfheal

import (
	"fmt"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/driftguard/driftguard/health"
	"github.com/driftguard/driftguard/test/wait"
)

// restartedPod is a pod whose container exited with code 1 and runs again
// since startedAt: crash-looping until health.RestartWindow after it.
func restartedPod(startedAt time.Time) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "Pod",
		"metadata": map[string]any{"name": "web-1", "namespace": "shop"},
		"spec":     map[string]any{"restartPolicy": "Always"},
		"status": map[string]any{
			"phase":      "Running",
			"conditions": []any{map[string]any{"type": "Ready", "status": "True"}},
			"containerStatuses": []any{map[string]any{
				"name": "web", "ready": true, "restartCount": int64(3),
				"lastState": map[string]any{"terminated": map[string]any{"exitCode": int64(1), "reason": "Error"}},
				"state":     map[string]any{"running": map[string]any{"startedAt": startedAt.UTC().Format(time.RFC3339)}},
			}},
		},
	}}
}

// A result that holds only until a time is assessed again from the kept
// object once the time has passed, without any event: the book must not
// keep a crash-looping pod Degraded forever, nor forget the object's
// status (the cache has none).
func TestHealthBookExpiring(t *testing.T) {
	it := item{gvk: schema.GroupVersionKind{Version: "v1", Kind: "Pod"}, namespace: "shop", name: "web-1"}
	for _, tc := range []struct {
		name      string
		startedAt time.Time
		first     health.State
		after     health.State // after the window, with no event
		keeps     bool         // the book keeps the object
	}{
		{"window ends in a second", time.Now().Add(-health.RestartWindow + 1500*time.Millisecond), health.Degraded, health.Healthy, true},
		{"window long over", time.Now().Add(-time.Hour), health.Healthy, health.Healthy, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := newHealthBook()
			b.note(it, restartedPod(tc.startedAt))
			r, ok := b.get(it)
			if !ok || r.State != tc.first {
				t.Fatalf("get = %v, %v; want %s", r, ok, tc.first)
			}
			if _, kept := b.expiring[it]; kept != tc.keeps {
				t.Errorf("object kept: %v, want %v", kept, tc.keeps)
			}
			wait.Eventually(t, time.Until(r.Until)+10*time.Second, "the result after the window", func() error {
				if r, ok := b.get(it); !ok || r.State != tc.after {
					return fmt.Errorf("get = %v, %v; want %s", r, ok, tc.after)
				}
				return nil
			})
			if _, kept := b.expiring[it]; kept {
				t.Error("the object is still kept after its result stopped expiring")
			}
			b.forget(it)
			if _, ok := b.get(it); ok {
				t.Error("forgotten object still has a result")
			}
		})
	}
}

package e2e

import (
	"fmt"
	"testing"
)

// TestNoOpReconcileMakesNoAPICalls: full reconciles of an unchanged revision
// compare against the informer cache and write nothing: no API call at all.
// Not parallel, so that no other Guard's work is counted.
func TestNoOpReconcileMakesNoAPICalls(t *testing.T) {
	const ns = "noop"
	files := map[string]string{"ns.yaml": namespace(ns)}
	for i := range 30 {
		files[fmt.Sprintf("cm-%02d.yaml", i)] = configMap(ns, fmt.Sprintf("cm-%02d", i), "v")
	}
	files["web.yaml"] = deployment(ns, "web", 2)
	repo := h.NewGuard(t, "noop", true, files)
	h.WaitApplied(t, repo.Guard, repo.Initial)

	// Let the first reconcile's status update and the informers settle
	// (WaitReconciles returns when the reconciles before the last one have
	// finished), then count the API calls of two more.
	h.WaitReconciles(t, "noop", 2)
	before := h.APICalls()
	h.WaitReconciles(t, "noop", 2)
	after := h.APICalls()
	var made []string
	for k, v := range after {
		if d := v - before[k]; d > 0 {
			made = append(made, fmt.Sprintf("%s x%d", k, d))
		}
	}
	if len(made) > 0 {
		t.Fatalf("no-op reconciles of %d objects made API calls: %v", len(files), made)
	}
}

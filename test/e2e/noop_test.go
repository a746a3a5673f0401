package e2e

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/driftguard/driftguard/test/harness"
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

	refs := func() int {
		n := 0
		for k, v := range h.GitCalls() {
			if strings.Contains(k, "/noop.git/info/refs") {
				n += v
			}
		}
		return n
	}
	// Let the first reconcile's status update and the informers settle. A
	// Guard is never reconciled twice at once, so when the second reconcile
	// after this point asks Git for its refs, the first one has finished,
	// status patch included.
	start := refs()
	harness.Eventually(t, 30*time.Second, "one more reconcile, finished", func() error {
		if refs() < start+2 {
			return fmt.Errorf("%d fetches so far", refs()-start)
		}
		return nil
	})
	before, gitBefore := h.APICalls(), refs()
	harness.Eventually(t, 30*time.Second, "two more full reconciles (each asks Git for its refs)", func() error {
		if refs() < gitBefore+2 {
			return fmt.Errorf("%d fetches so far", refs()-gitBefore)
		}
		return nil
	})
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

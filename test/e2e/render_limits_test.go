package e2e

import (
	"strings"
	"testing"

	"github.com/driftguard/driftguard/api/v1alpha1"
)

// TestRenderLimitStallsOnlyItsGuard: a commit of a JSON file nested a
// million arrays deep (2 MB; with variables on, its substitution used to
// end the guard's process with a fatal stack overflow) stalls that Guard
// with a message naming the file and the limit; its last good revision
// stays applied, another Guard's commit is applied meanwhile, and a fixed
// commit recovers.
func TestRenderLimitStallsOnlyItsGuard(t *testing.T) {
	t.Parallel()
	const ns = "render-limits"
	vars := func(s *v1alpha1.GuardSpec) { s.Vars = map[string]string{"GREETING": "hello"} }
	repo := h.NewGuard(t, "render-limits", true, map[string]string{
		"ns.yaml": namespace(ns),
		"a.yaml":  configMap(ns, "a", "${GREETING}"),
	}, vars)
	h.WaitApplied(t, repo.Guard, repo.Initial)
	waitValue(t, ns, "a", "hello")

	const depth = 1_000_000
	bad := repo.Change(t, "nest a million deep", map[string]string{
		"deep.json": `{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "deep", "namespace": "` + ns + `"}, "data": ` +
			strings.Repeat("[", depth) + strings.Repeat("]", depth) + "}",
		"a.yaml": configMap(ns, "a", "must not be applied"),
	})
	ready := waitStalled(t, repo.Guard, bad)
	if !strings.Contains(ready.Message, "deep.json:1: nested deeper than 100 levels (limit --render-max-depth=100)") {
		t.Fatalf("Ready must name the file and the limit: %s", ready.Message)
	}
	if g := h.Guard(t, repo.Guard); g.Status.LastAppliedRevision != repo.Initial {
		t.Fatalf("last applied revision = %s, want %s", g.Status.LastAppliedRevision, repo.Initial)
	}

	// The process renders and applies other Guards all along.
	other := h.NewGuard(t, "render-limits-other", true, map[string]string{
		"cm.yaml": configMap(ns, "other", "applied"),
	})
	h.WaitApplied(t, other.Guard, other.Initial)
	waitValue(t, ns, "other", "applied")
	waitValue(t, ns, "a", "hello")

	fixed := repo.Change(t, "flatten", nil, "deep.json")
	h.WaitApplied(t, repo.Guard, fixed)
	waitValue(t, ns, "a", "must not be applied")
}

package workloadhealth

import (
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/driftguard/driftguard/api/v1alpha1"
	"github.com/driftguard/driftguard/devenv"
	"github.com/driftguard/driftguard/health"
)

// A Healthy Deployment whose new pods crash-loop (a change in Git makes
// them exit; the simulated cluster's stages run, crash, back off and
// restart them every few seconds) turns its Guard Degraded, naming the
// pod, its exit code and restarts, and keeps it so through whole loops:
// the Deployment's status alone goes Progressing and back to Healthy at
// every restart (it counts the pod ready while it runs for a moment), as
// Argo CD and kstatus read it.
func TestCrashLoopingDeployment(t *testing.T) {
	t.Parallel()
	const ns, guard = "hd-crashloop", "hd-crashloop"
	rec := record(t, guard)
	repo := h.NewGuard(t, guard, true, map[string]string{
		"namespace.yaml":  namespace(ns),
		"deployment.yaml": deployment(ns, "web", "nginx:1.27", 1, 0, ""),
	}, func(s *v1alpha1.GuardSpec) { s.Interval = metav1.Duration{Duration: time.Hour} })
	rec.await(t, 0, 60*time.Second, "first revision Healthy", func(s step) bool { return s.Rev == repo.Initial && s.Health == string(health.Healthy) })

	crashing := strings.Replace(deployment(ns, "web", "nginx:1.28", 1, 0, ""),
		"    metadata:\n      labels:\n", "    metadata:\n      annotations:\n        "+devenv.CrashLoopPodAnnotation+": \"true\"\n      labels:\n", 1)
	rev := repo.Change(t, "web: a release that crashes", map[string]string{"deployment.yaml": crashing})
	mark := len(rec.snapshot())
	requestSync(t, guard)
	listed := "Deployment hd-crashloop/web: Degraded: pod web-"
	is := func(s step) bool {
		return s.Rev == rev && s.Health == string(health.Degraded) && len(s.Unhealthy) == 1 && strings.HasPrefix(s.Unhealthy[0], listed) &&
			strings.Contains(s.Unhealthy[0], "container app exited with code 1 (Error)")
	}
	first := rec.await(t, mark, 120*time.Second, "Degraded with the crashing pod", is)
	t.Logf("status.health went %s", strings.Join(rec.healths(mark, first+1), " → "))
	// Whole loops of crash, back-off and restart (5.5 s each): it stays so.
	time.Sleep(20 * time.Second)
	for _, s := range rec.snapshot()[first:] {
		if !is(s) {
			t.Errorf("after %s: %s; want it to stay Degraded with %q", s.At.Sub(rec.snapshot()[first].At).Round(time.Millisecond), s, listed)
		}
	}
}

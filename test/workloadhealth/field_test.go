package workloadhealth

import (
	"fmt"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/driftguard/driftguard/api/v1alpha1"
	"github.com/driftguard/driftguard/devenv"
	"github.com/driftguard/driftguard/health"
)

// Objects whose health the field got wrong, managed by Guards on the
// simulated cluster, whose real controllers (the HPA controller of
// kube-controller-manager, KWOK's pod stages) set their status:
//
//   - a Pod that crash-loops (the simulated cluster's stages run it,
//     crash it, back it off and restart it every few seconds) keeps its
//     Guard Degraded at every step of its loop, never Progressing or
//     Healthy between two back-offs, with exit code and restarts;
//   - an autoscaler whose target does not exist makes its Guard Degraded
//     with the controller's message (it read Healthy: Resource is current),
//     while a ConfigMap beside it is not listed;
//   - a restartPolicy Never pod that runs is Progressing, not Healthy.
//
// Each Guard has an interval of an hour: the informer alone carries the
// objects' health into status.
func TestFieldObjects(t *testing.T) {
	t.Parallel()
	crashPod := func(ns string) string {
		return fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata:
  name: crashloop
  namespace: %s
  annotations: {%s: "true"}
spec:
  restartPolicy: Always
  containers: [{name: app, image: "busybox:1.37", command: [sh, -c, "exit 1"]}]
`, ns, devenv.CrashLoopPodAnnotation)
	}
	hpa := func(ns string) string {
		return fmt.Sprintf(`apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata: {name: no-target, namespace: %s}
spec:
  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: nope}
  minReplicas: 1
  maxReplicas: 3
`, ns)
	}
	neverPod := func(ns string) string {
		return fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata: {name: once, namespace: %s}
spec:
  restartPolicy: Never
  containers: [{name: app, image: "busybox:1.37", command: [sleep, "3600"]}]
`, ns)
	}
	configMap := func(ns string) string {
		return fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: settings, namespace: %s}\ndata: {LOG_LEVEL: info}\n", ns)
	}
	for _, tc := range []struct {
		name   string
		files  func(ns string) map[string]string
		want   string // status.health
		listed string // the one entry of status.unhealthy starts with it
		steady time.Duration
	}{
		{"hd-field-crashloop", func(ns string) map[string]string {
			return map[string]string{"pod.yaml": crashPod(ns)}
		}, string(health.Degraded), "Pod hd-field-crashloop/crashloop: Degraded: container app exited with code 1 (Error)", 20 * time.Second},
		{"hd-field-hpa", func(ns string) map[string]string {
			return map[string]string{"hpa.yaml": hpa(ns), "configmap.yaml": configMap(ns)}
		}, string(health.Degraded), `HorizontalPodAutoscaler hd-field-hpa/no-target: Degraded: cannot scale: FailedGetScale: the HPA controller was unable to get the target's current scale: deployments.apps "nope" not found`, 0},
		{"hd-field-never", func(ns string) map[string]string {
			return map[string]string{"pod.yaml": neverPod(ns)}
		}, string(health.Progressing), "Pod hd-field-never/once: Progressing: running (restartPolicy Never: done when it succeeds)", 3 * time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ns := tc.name
			rec := record(t, tc.name)
			files := tc.files(ns)
			files["namespace.yaml"] = namespace(ns)
			h.NewGuard(t, tc.name, true, files, func(s *v1alpha1.GuardSpec) { s.Interval = metav1.Duration{Duration: time.Hour} })
			is := func(s step) bool {
				return s.Health == tc.want && len(s.Unhealthy) == 1 && strings.HasPrefix(s.Unhealthy[0], tc.listed)
			}
			first := rec.await(t, 0, 120*time.Second, tc.want+": "+tc.listed, is)
			t.Logf("status.health went %s", strings.Join(rec.healths(0, first+1), " → "))
			if tc.steady == 0 {
				return
			}
			// It stays so: a crash-looping pod goes through a whole loop
			// every 5.5 s.
			time.Sleep(tc.steady)
			for _, s := range rec.snapshot()[first:] {
				if !is(s) {
					t.Errorf("after %s: %s; want it to stay %s", s.At.Sub(rec.snapshot()[first].At).Round(time.Millisecond), s, tc.listed)
				}
			}
		})
	}
}

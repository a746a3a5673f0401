package workloadhealth

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/driftguard/driftguard/api/v1alpha1"
	"github.com/driftguard/driftguard/health"
)

// A Job that completes makes its Guard Healthy; a Job whose pod fails (the
// simulated cluster fails pods annotated driftguard.io/test-fail) makes it
// Degraded. Both Guards have an interval of an hour: the informer alone
// carries the Job's progress into status.
func TestJobs(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		fail bool
		want string
	}{
		{"hd-job-complete", false, string(health.Healthy)},
		{"hd-job-fail", true, string(health.Degraded)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ns := tc.name
			rec := record(t, tc.name)
			h.NewGuard(t, tc.name, true, map[string]string{"namespace.yaml": namespace(ns), "job.yaml": hookJob(ns, "  name: task", tc.fail)},
				func(s *v1alpha1.GuardSpec) { s.Interval = metav1.Duration{Duration: time.Hour} })
			end := rec.await(t, 0, 90*time.Second, tc.want, func(s step) bool { return s.Health == tc.want })
			seq := rec.healths(0, end+1)
			t.Logf("Job: status.health went %s", strings.Join(seq, " → "))
			s := rec.snapshot()[end]
			if tc.fail {
				if !strings.Contains(strings.Join(s.Unhealthy, ";"), "Job "+ns+"/task: Degraded") || s.Healthy != "False" {
					t.Errorf("Degraded but %s", s)
				}
				// The pod failed as the stage says: phase Failed, exit code 1.
				var pods corev1.PodList
				if err := h.Admin.List(context.Background(), &pods, client.InNamespace(ns)); err != nil {
					t.Fatal(err)
				}
				if len(pods.Items) != 1 || pods.Items[0].Status.Phase != corev1.PodFailed ||
					len(pods.Items[0].Status.ContainerStatuses) != 1 || pods.Items[0].Status.ContainerStatuses[0].State.Terminated == nil ||
					pods.Items[0].Status.ContainerStatuses[0].State.Terminated.ExitCode != 1 {
					t.Errorf("want one pod Failed with exit code 1, got %+v", pods.Items)
				}
				expectEvent(t, tc.name, "HealthDegraded", "Job "+ns+"/task")
				return
			}
			if s.Healthy != "True" || len(s.Unhealthy) != 0 {
				t.Errorf("Healthy but %s", s)
			}
			if len(seq) < 2 || seq[len(seq)-2] != string(health.Progressing) {
				t.Errorf("status.health went %v: want Progressing (the Job running) before Healthy", seq)
			}
		})
	}
}

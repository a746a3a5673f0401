package workloadhealth

import (
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/driftguard/driftguard/api/v1alpha1"
	"github.com/driftguard/driftguard/health"
)

func fromDataConfigMap(ns, state, message string) string {
	return `apiVersion: v1
kind: ConfigMap
metadata:
  name: replica
  namespace: ` + ns + `
  labels:
    health.example.com/from-data: "true"
data:
  state: ` + state + `
  message: ` + message + `
`
}

// The custom rule in the guard's policy folder (healthRego) decides the
// health of labelled ConfigMaps, which the built-in rules call Healthy.
func TestCustomHealthRule(t *testing.T) {
	t.Parallel()
	const ns, guard = "hd-custom", "hd-custom"
	rec := record(t, guard)
	repo := h.NewGuard(t, guard, true, map[string]string{
		"namespace.yaml": namespace(ns),
		"configmap.yaml": fromDataConfigMap(ns, "Degraded", "replication lag 300s"),
		"plain.yaml":     "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: plain\n  namespace: " + ns + "\ndata:\n  state: Degraded\n",
	}, func(s *v1alpha1.GuardSpec) { s.Interval = metav1.Duration{Duration: time.Hour} })

	degraded := rec.await(t, 0, 60*time.Second, "Degraded by the custom rule", func(s step) bool { return s.Health == string(health.Degraded) })
	s := rec.snapshot()[degraded]
	if want := []string{"ConfigMap hd-custom/replica: Degraded: replication lag 300s"}; strings.Join(s.Unhealthy, ";") != want[0] || s.Healthy != "False" {
		t.Errorf("want status.unhealthy %q (the unlabelled ConfigMap stays Healthy), got %s", want, s)
	}

	rev := repo.Change(t, "replica caught up", map[string]string{"configmap.yaml": fromDataConfigMap(ns, "Healthy", "caught up")})
	mark := len(rec.snapshot())
	requestSync(t, guard)
	healthy := rec.await(t, mark, 60*time.Second, "Healthy by the custom rule", func(s step) bool { return s.Rev == rev && s.Health == string(health.Healthy) })
	if s := rec.snapshot()[healthy]; s.Healthy != "True" || len(s.Unhealthy) != 0 {
		t.Errorf("Healthy but %s", s)
	}

	rev = repo.Change(t, "replica suspended", map[string]string{"configmap.yaml": fromDataConfigMap(ns, "Suspended", "paused for maintenance")})
	mark = len(rec.snapshot())
	requestSync(t, guard)
	suspended := rec.await(t, mark, 60*time.Second, "Suspended by the custom rule", func(s step) bool { return s.Rev == rev && s.Health == string(health.Suspended) })
	if s := rec.snapshot()[suspended]; strings.Join(s.Unhealthy, ";") != "ConfigMap hd-custom/replica: Suspended: paused for maintenance" {
		t.Errorf("Suspended but %s", s)
	}
}

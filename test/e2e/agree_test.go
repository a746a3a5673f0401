package e2e

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/driftguard/driftguard/api/v1alpha1"
	"github.com/driftguard/driftguard/audit"
	"github.com/driftguard/driftguard/test/wait"
)

// agreeManifests differ in text from what the API server stores: defaults
// left out, quantities in another unit, a port as a string, containers (a
// list with a merge key) in Git's order. None of it is drift.
const agreeManifests = `apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  namespace: agree
spec:
  selector:
    matchLabels: {app: web}
  template:
    metadata:
      labels: {app: web}
    spec:
      containers:
      - name: app
        image: nginx:1.27
        resources:
          requests: {cpu: 1000m, memory: 1024Mi}
        ports:
        - containerPort: 80
      - name: sidecar
        image: busybox:1
---
apiVersion: v1
kind: Service
metadata:
  name: web
  namespace: agree
spec:
  selector: {app: web}
  ports:
  - port: 80
    targetPort: "http"
`

// TestThreePathsAgree feeds the same objects through the three places that
// decide whether the cluster equals Git: the full reconcile (no write), the
// informer (no drift recorded) and the webhook (an equal value is admitted,
// another is denied, naming the same field the informer then names).
func TestThreePathsAgree(t *testing.T) {
	t.Parallel()
	const ns = "agree"
	repo := h.NewGuard(t, "agree", true, map[string]string{"ns.yaml": namespace(ns), "app.yaml": agreeManifests})
	h.WaitApplied(t, repo.Guard, repo.Initial)

	writes := func() int {
		n := 0
		for k, v := range h.APICalls() {
			if (strings.HasPrefix(k, "PATCH ") || strings.HasPrefix(k, "PUT ")) && strings.Contains(k, "/namespaces/agree/") {
				n += v
			}
		}
		return n
	}
	before := writes()
	// Full reconcile: two more write nothing.
	h.WaitReconciles(t, "agree", 3)
	if w := writes(); w != before {
		t.Fatalf("full reconciles of an unchanged revision wrote %d times to objects equal to Git", w-before)
	}
	// Informer: no drift.
	if g := h.Guard(t, repo.Guard); g.Status.DriftedObjects != 0 {
		t.Fatalf("informer sees drift where there is none: %v", g.Status.Drifted)
	}
	if recs := h.Audit.Find(func(r audit.Record) bool { return r.Guard == repo.Guard && r.Type == audit.Drift }); len(recs) > 0 {
		t.Fatalf("drift recorded for objects equal to Git: %+v", recs[0])
	}
	// Webhook: the same value in another form is no change; another value is.
	cpu := func(v string) []string {
		return []string{"patch", "deployment", "web", "-n", ns, "--type=strategic", "-p",
			fmt.Sprintf(`{"spec":{"template":{"spec":{"containers":[{"name":"app","resources":{"requests":{"cpu":%q}}}]}}}}`, v)}
	}
	if out, err := h.Kubectl(t, cpu("1")...); err != nil {
		t.Fatalf("an equal quantity was denied: %s", out)
	}
	if out, err := h.Kubectl(t, "label", "service", "web", "-n", ns, "team=web"); err == nil || !strings.Contains(out, "/metadata/labels/team") {
		t.Fatalf("a label Git does not set must be denied, naming it: %v %s", err, out)
	}
	out, err := h.Kubectl(t, cpu("2")...)
	if err == nil || !strings.Contains(out, "/spec/template/spec/containers/0/resources/requests/cpu") {
		t.Fatalf("a different quantity must be denied naming the field: %v: %s", err, out)
	}

	// With the webhook only recording (dryrun), the informer names the same field.
	updateGuard(t, repo.Guard, func(s *v1alpha1.GuardSpec) { s.Enforcement = v1alpha1.EnforcementDryRun })
	wait.Eventually(t, 30*time.Second, "dryrun in force", func() error {
		out, err := h.Kubectl(t, cpu("2")...)
		if err != nil {
			return fmt.Errorf("%v: %s", err, out)
		}
		return nil
	})
	rec := h.Audit.Wait(t, 20*time.Second, "drift of the cpu request", func(r audit.Record) bool {
		return r.Guard == repo.Guard && r.Type == audit.Drift && r.Object.Kind == "Deployment"
	})
	if len(rec.Fields) != 1 || rec.Fields[0].Path != "/spec/template/spec/containers/0/resources/requests/cpu" {
		t.Fatalf("the informer must name the field the webhook named: %+v", rec.Fields)
	}
}

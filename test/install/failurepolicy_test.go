package install

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/driftguard/driftguard/audit"
	"github.com/driftguard/driftguard/test/wait"
)

var appsFiles = map[string]string{
	"ns.yaml": "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: apps\n",
	"cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings\n  namespace: apps\ndata:\n  color: blue\n",
	"deploy.yaml": `apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  namespace: apps
spec:
  replicas: 2
  selector:
    matchLabels: {app: web}
  template:
    metadata:
      labels: {app: web}
    spec:
      containers:
        - name: web
          image: registry.example/web:1
`,
}

// patchColor is a kubectl edit-style change of a field Git sets, as alice.
func (e *env) patchColor(color string) (string, error) {
	return e.kubectl(e.aliceKC, "patch", "configmap", "settings", "-n", "apps", "-p", fmt.Sprintf(`{"data":{"color":%q}}`, color))
}

func (e *env) waitDenied(what string) {
	e.t.Helper()
	wait.Eventually(e.t, 30*time.Second, what, func() error {
		out, err := e.kubectl(e.aliceKC, "patch", "configmap", "settings", "-n", "apps", "--dry-run=server", "-p", `{"data":{"color":"probe"}}`)
		if err == nil || !strings.Contains(out, "managed by Git") {
			return fmt.Errorf("not denied by the guard: %v %s", err, out)
		}
		return nil
	})
}

// TestFailurePolicyIgnore: with the guard down, a kubectl change of a managed
// object is admitted (the default policy: a guard outage never stops the
// cluster), and reverted within seconds of the guard's return.
func TestFailurePolicyIgnore(t *testing.T) {
	e := newEnv(t)
	e.guard("apps", appsFiles)
	g := e.startGuard("guard-1", "--failure-policy", "Ignore")
	e.waitValue(60*time.Second, "blue", "configmap", "settings", "-n", "apps", "-o", "jsonpath={.data.color}")
	e.waitDenied("the guard denies while it runs")

	g.kill()
	if out, err := e.patchColor("red"); err != nil {
		t.Fatalf("with the guard down, failurePolicy Ignore must admit the change: %v %s", err, out)
	}
	if out, err := e.kubectl("", "get", "configmap", "settings", "-n", "apps", "-o", "jsonpath={.data.color}"); err != nil || out != "red" {
		t.Fatalf("the change was not stored: %q %v", out, err)
	}

	g2 := e.startGuard("guard-2", "--failure-policy", "Ignore")
	e.waitValue(30*time.Second, "blue", "configmap", "settings", "-n", "apps", "-o", "jsonpath={.data.color}")
	g2.audit.Wait(t, 10*time.Second, "the revert", func(r audit.Record) bool {
		return r.Type == audit.Revert && r.Object.Name == "settings"
	})
	e.waitDenied("the guard denies again")
}

// TestFailurePolicyFail: with failurePolicy Fail and the guard down, a change
// of a managed object is denied; objects in kube-system and the guard's own
// namespace (its own Deployment) are never sent to the webhook, so they can
// still be changed and the guard restarted.
func TestFailurePolicyFail(t *testing.T) {
	e := newEnv(t)
	// The guard's own Deployment, carrying the managed label (of no Guard,
	// so nothing prunes it) and of a kind the webhook guards: only its
	// namespace keeps it out of the webhook.
	if out, err := e.kubectl("", "create", "deployment", "driftguard", "-n", guardNS, "--image=registry.example/driftguard:1"); err != nil {
		t.Fatalf("%v %s", err, out)
	}
	if out, err := e.kubectl("", "label", "deployment", "driftguard", "-n", guardNS, "driftguard.io/guard=driftguard"); err != nil {
		t.Fatalf("%v %s", err, out)
	}
	e.guard("apps", appsFiles)
	g := e.startGuard("guard-1", "--failure-policy", "Fail", "--deployment-name", "driftguard")
	e.waitValue(60*time.Second, "blue", "configmap", "settings", "-n", "apps", "-o", "jsonpath={.data.color}")
	e.waitValue(30*time.Second, "Fail", "validatingwebhookconfiguration", webhookName, "-o", "jsonpath={.webhooks[0].failurePolicy}")
	e.waitDenied("the guard denies while it runs")

	g.stop(t)
	out, err := e.patchColor("red")
	if err == nil || !strings.Contains(out, "failed calling webhook") {
		t.Fatalf("with the guard down, failurePolicy Fail must deny the change: %v %s", err, out)
	}
	if out, err := e.kubectl(e.aliceKC, "scale", "deployment", "web", "-n", "apps", "--replicas=5"); err == nil {
		t.Fatalf("scale of a managed Deployment admitted with the guard down: %s", out)
	}
	// The guard's own Deployment: a new image and a restart go through.
	for _, args := range [][]string{
		{"set", "image", "deployment/driftguard", "-n", guardNS, "driftguard=registry.example/driftguard:2"},
		{"scale", "deployment", "driftguard", "-n", guardNS, "--replicas=3"},
		{"rollout", "restart", "deployment/driftguard", "-n", guardNS},
		{"create", "configmap", "anything", "-n", "kube-system", "--from-literal=a=b"},
	} {
		if out, err := e.kubectl(e.aliceKC, args...); err != nil {
			t.Errorf("kubectl %v with the guard down: %v %s", args, err, out)
		}
	}

	g2 := e.startGuard("guard-2", "--failure-policy", "Fail", "--deployment-name", "driftguard")
	e.waitDenied("the guard denies again")
	if out, err := e.kubectl("", "get", "configmap", "settings", "-n", "apps", "-o", "jsonpath={.data.color}"); err != nil || out != "blue" {
		t.Fatalf("managed object changed while the guard was down: %q %v", out, err)
	}
	// The returning guard watches its own Deployment again.
	if out, err := e.kubectl(e.aliceKC, "scale", "deployment", "driftguard", "-n", guardNS, "--replicas=2"); err != nil {
		t.Fatalf("%v %s", err, out)
	}
	g2.audit.Wait(t, 10*time.Second, "the guard's Deployment scaled", func(r audit.Record) bool {
		return r.Type == audit.Protection && r.Object.Kind == "Deployment" && r.Object.Name == "driftguard"
	})
}

package install

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/driftguard/driftguard/audit"
	"github.com/driftguard/driftguard/test/wait"
)

// TestSelfProtection: webhook configurations are not themselves subject to
// webhooks, so the guard watches its own: deleted or changed by hand, each is
// back within seconds, with an audit record naming who changed it. Changes to
// the guard's own Deployment and to Guards are recorded. While the guard's
// Deployment is gone (helm uninstall) a deleted configuration stays deleted.
func TestSelfProtection(t *testing.T) {
	e := newEnv(t)
	// A Deployment standing for the guard's own.
	if out, err := e.kubectl("", "create", "deployment", "driftguard", "-n", guardNS, "--image=registry.example/driftguard:dev"); err != nil {
		t.Fatalf("%v %s", err, out)
	}
	e.guard("apps", map[string]string{
		"ns.yaml": "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: apps\n",
		"cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings\n  namespace: apps\ndata:\n  color: blue\n",
	})
	g := e.startGuard("guard", "--deployment-name", "driftguard")
	e.waitValue(60*time.Second, "blue", "configmap", "settings", "-n", "apps", "-o", "jsonpath={.data.color}")
	hookPath := "jsonpath={.webhooks[0].failurePolicy}"
	e.waitValue(30*time.Second, "Ignore", "validatingwebhookconfiguration", webhookName, "-o", hookPath)
	// The webhook denies a change to a managed object.
	deny := func() error {
		out, err := e.kubectl(e.aliceKC, "patch", "configmap", "settings", "-n", "apps", "--dry-run=server", "-p", `{"data":{"color":"red"}}`)
		if err == nil || !strings.Contains(out, "managed by Git") {
			return fmt.Errorf("not denied: %v %s", err, out)
		}
		return nil
	}
	wait.Eventually(t, 30*time.Second, "webhook denies", deny)

	protection := func(kind, op string) func(audit.Record) bool {
		return func(r audit.Record) bool {
			return r.Type == audit.Protection && r.Object.Kind == kind && r.Operation == op
		}
	}

	// kubectl delete: back within seconds, and recorded.
	for _, kind := range []string{"validatingwebhookconfiguration", "mutatingwebhookconfiguration"} {
		if out, err := e.kubectl(e.aliceKC, "delete", kind, webhookName); err != nil {
			t.Fatalf("%v %s", err, out)
		}
		wait.Eventually(t, 10*time.Second, kind+" restored", func() error {
			_, err := e.kubectl("", "get", kind, webhookName)
			return err
		})
	}
	rec := g.audit.Wait(t, 10*time.Second, "validating configuration deleted", protection("ValidatingWebhookConfiguration", "DELETE"))
	if rec.Action != "restored" || rec.Object.Name != webhookName {
		t.Errorf("record of the deletion: %+v", rec)
	}
	g.audit.Wait(t, 10*time.Second, "mutating configuration deleted", protection("MutatingWebhookConfiguration", "DELETE"))
	wait.Eventually(t, 30*time.Second, "webhook denies after the restore", deny)

	// kubectl patch of the failure policy, the rules, the CA bundle, the
	// namespace selector, or a match condition that turns the webhook off:
	// each is put back, and the record names the field manager and the field.
	for _, tc := range []struct {
		kind, patch, field, check, want string
	}{
		{"validatingwebhookconfiguration", `[{"op":"replace","path":"/webhooks/0/failurePolicy","value":"Fail"}]`, "/webhooks/0/failurePolicy", hookPath, "Ignore"},
		{"validatingwebhookconfiguration", `[{"op":"replace","path":"/webhooks/0/rules/0/resources","value":["secrets"]}]`, "/webhooks/0/rules", "jsonpath={.webhooks[0].rules[0].resources[0]}", "configmaps"},
		{"validatingwebhookconfiguration", `[{"op":"replace","path":"/webhooks/0/clientConfig/caBundle","value":"Q0EK"}]`, "/webhooks/0/clientConfig/caBundle", "jsonpath={.webhooks[0].clientConfig.caBundle}", ""},
		{"validatingwebhookconfiguration", `[{"op":"add","path":"/webhooks/0/matchConditions","value":[{"name":"off","expression":"false"}]}]`, "/webhooks/0/matchConditions", "jsonpath={.webhooks[0].matchConditions}", ""},
		{"mutatingwebhookconfiguration", `[{"op":"replace","path":"/webhooks/0/namespaceSelector","value":{}}]`, "/webhooks/0/namespaceSelector", "jsonpath={.webhooks[0].namespaceSelector.matchExpressions[0].values}", `["kube-system","driftguard-system"]`},
	} {
		t.Run(tc.field, func(t *testing.T) {
			before := len(g.audit.Find(protection(kindOf(tc.kind), "UPDATE")))
			if out, err := e.kubectl(e.aliceKC, "patch", tc.kind, webhookName, "--type=json", "-p", tc.patch); err != nil {
				t.Fatalf("%v %s", err, out)
			}
			if tc.want != "" {
				e.waitValue(10*time.Second, tc.want, tc.kind, webhookName, "-o", tc.check)
			}
			var found audit.Record
			wait.Eventually(t, 10*time.Second, "protection record of "+tc.field, func() error {
				recs := g.audit.Find(protection(kindOf(tc.kind), "UPDATE"))
				for _, r := range recs[min(before, len(recs)):] {
					for _, f := range r.Fields {
						if strings.HasPrefix(f.Path, tc.field) {
							found = r
							return nil
						}
					}
				}
				return fmt.Errorf("%d records, none names %s", len(recs)-before, tc.field)
			})
			if found.Action != "restored" || found.Manager != "kubectl-patch" || found.User != "kubectl-patch" {
				t.Errorf("record: %+v", found)
			}
			wait.Eventually(t, 10*time.Second, "webhook denies after the restore", deny)
		})
	}

	// The guard's Deployment and Guards: changes are recorded with who made them.
	if out, err := e.kubectl(e.aliceKC, "set", "image", "deployment/driftguard", "-n", guardNS, "driftguard=registry.example/other:latest"); err != nil {
		t.Fatalf("%v %s", err, out)
	}
	rec = g.audit.Wait(t, 10*time.Second, "deployment change", protection("Deployment", "UPDATE"))
	if rec.Manager != "kubectl-set" || len(rec.Fields) == 0 || !strings.Contains(rec.Fields[0].Path, "image") {
		t.Errorf("record of the Deployment change: %+v", rec)
	}
	if out, err := e.kubectl(e.aliceKC, "patch", "guard", "apps", "--type=merge", "-p", `{"spec":{"prune":false}}`); err != nil {
		t.Fatalf("%v %s", err, out)
	}
	rec = g.audit.Wait(t, 10*time.Second, "guard change", protection("Guard", "UPDATE"))
	if rec.Manager != "kubectl-patch" || rec.Guard != "apps" || len(rec.Fields) != 1 || rec.Fields[0].Path != "/spec/prune" {
		t.Errorf("record of the Guard change: %+v", rec)
	}

	// Uninstall: the Deployment goes first... then a deleted configuration stays deleted.
	if out, err := e.kubectl("", "delete", "deployment", "driftguard", "-n", guardNS); err != nil {
		t.Fatalf("%v %s", err, out)
	}
	g.audit.Wait(t, 10*time.Second, "deployment deletion", protection("Deployment", "DELETE"))
	if out, err := e.kubectl("", "delete", "validatingwebhookconfiguration", webhookName); err != nil {
		t.Fatalf("%v %s", err, out)
	}
	wait.Eventually(t, 20*time.Second, "the guard sees the uninstall", func() error {
		if g.logCount("not restored") == 0 {
			return fmt.Errorf("no decision logged yet")
		}
		return nil
	})
	if out, err := e.kubectl("", "get", "validatingwebhookconfiguration", webhookName); err == nil {
		t.Fatalf("restored during an uninstall: %s", out)
	}
}

func kindOf(resource string) string {
	switch resource {
	case "validatingwebhookconfiguration":
		return "ValidatingWebhookConfiguration"
	case "mutatingwebhookconfiguration":
		return "MutatingWebhookConfiguration"
	}
	return resource
}

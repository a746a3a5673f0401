package e2e

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/driftguard/driftguard/audit"
	"github.com/driftguard/driftguard/decision"
	"github.com/driftguard/driftguard/test/wait"
)

// TestWebhookRulesFollowGit: the webhook configuration names the resources of
// the kinds in Git (not every resource in the cluster), and a kind that
// enters Git is added before its objects are applied.
func TestWebhookRulesFollowGit(t *testing.T) {
	t.Parallel()
	const ns = "rules"
	repo := h.NewGuard(t, "rules", true, map[string]string{
		"ns.yaml": namespace(ns),
		"cm.yaml": configMap(ns, "cfg", "v1"),
	})
	h.WaitApplied(t, repo.Guard, repo.Initial)
	cfg := webhookConfig(t)
	for _, want := range []string{"configmaps", "namespaces"} {
		if !slices.Contains(ruleResources(cfg, "objects.driftguard.io"), want) {
			t.Fatalf("objects webhook rules %v lack %s", ruleResources(cfg, "objects.driftguard.io"), want)
		}
	}
	if got := ruleResources(cfg, "objects.driftguard.io"); slices.Contains(got, "*") || slices.Contains(got, "pods") {
		t.Fatalf("rules name resources Git does not manage: %v", got)
	}
	if !slices.Contains(ruleResources(cfg, "scale.driftguard.io"), "configmaps/scale") {
		t.Fatalf("scale rules: %v", ruleResources(cfg, "scale.driftguard.io"))
	}

	// A new kind in Git: its rule is registered by the time it is applied,
	// so the first manual change to it is already denied.
	rev := repo.Change(t, "add a service account", map[string]string{"sa.yaml": `apiVersion: v1
kind: ServiceAccount
metadata:
  name: bot
  namespace: rules
  labels: {team: a}
`})
	h.WaitApplied(t, repo.Guard, rev)
	if !slices.Contains(ruleResources(webhookConfig(t), "objects.driftguard.io"), "serviceaccounts") {
		t.Fatalf("serviceaccounts not in the rules after the revision that added one")
	}
	wait.Eventually(t, 10*time.Second, "label change on the new kind denied", func() error {
		out, err := h.Kubectl(t, "label", "serviceaccount", "bot", "-n", ns, "team=b", "--overwrite")
		if err == nil || !strings.Contains(out, "managed by Git") {
			return fmt.Errorf("admitted or not by the guard: %v %s", err, out)
		}
		return nil
	})
}

// TestOrphanCreate: creating an object Git does not have in a namespace a
// Guard owns is decided by policy (the default warns and records it);
// creating one elsewhere is not asked about.
func TestOrphanCreate(t *testing.T) {
	t.Parallel()
	const ns = "orphans"
	repo := h.NewGuard(t, "orphans", true, map[string]string{
		"ns.yaml": namespace(ns),
		"cm.yaml": configMap(ns, "cfg", "v1"),
	})
	h.WaitApplied(t, repo.Guard, repo.Initial)

	out, err := h.Kubectl(t, "create", "configmap", "by-hand", "-n", ns, "--from-literal=a=b")
	if err != nil {
		t.Fatalf("orphan create must be admitted by the default policy: %v %s", err, out)
	}
	for _, want := range []string{"Warning", "namespace orphans is managed by Git", "ns.yaml", "ConfigMap orphans/by-hand is not in Git"} {
		if !strings.Contains(out, want) {
			t.Errorf("kubectl output lacks %q:\n%s", want, out)
		}
	}
	rec := h.Audit.Wait(t, 10*time.Second, "orphan decision record", func(r audit.Record) bool {
		return r.Type == audit.Decision && r.Orphan && r.Object.Name == "by-hand"
	})
	if rec.Action != "warn" || rec.Rule != decision.RuleOrphan || rec.Guard != "orphans" || len(rec.PolicyInput) == 0 {
		t.Fatalf("orphan record: %+v", rec)
	}

	// Outside Guard-owned namespaces nobody asks.
	if out, err := h.Kubectl(t, "create", "configmap", "elsewhere", "-n", "default", "--from-literal=a=b"); err != nil || strings.Contains(out, "driftguard") {
		t.Fatalf("create in an unguarded namespace: %v %s", err, out)
	}
	t.Cleanup(func() { _, _ = h.Kubectl(t, "delete", "configmap", "elsewhere", "-n", "default") })
}

func webhookConfig(t *testing.T) *admissionregistrationv1.ValidatingWebhookConfiguration {
	t.Helper()
	var cfg admissionregistrationv1.ValidatingWebhookConfiguration
	if err := h.Admin.Get(context.Background(), client.ObjectKey{Name: h.WebhookConfigName}, &cfg); err != nil {
		t.Fatal(err)
	}
	return &cfg
}

func ruleResources(cfg *admissionregistrationv1.ValidatingWebhookConfiguration, hook string) []string {
	var out []string
	for _, w := range cfg.Webhooks {
		if w.Name != hook {
			continue
		}
		for _, r := range w.Rules {
			out = append(out, r.Resources...)
		}
	}
	return out
}

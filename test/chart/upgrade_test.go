package chart

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/driftguard/driftguard/test/wait"
)

// TestHelmAndTheRunningGuard: the chart installs skeletons of the webhook
// configurations and an empty certificate Secret; the guard, run as it runs
// in the cluster (the chart's ServiceAccount, the Service, its Deployment by
// name), fills them in. A helm upgrade then does not conflict with what the
// guard wrote nor undo it, and a helm uninstall removes the configurations
// and the Secret for good: the guard sees its Deployment gone and restores
// neither.
func TestHelmAndTheRunningGuard(t *testing.T) {
	chart := chartDir(t)
	cluster := startCluster(t)
	helm(t, cluster.AdminKubeconfig, "install", release, chart, "--namespace", releaseNS, "--create-namespace")
	kubectl := kubectlOf(cluster)

	opts := chartOptions(t)
	opts.LeaderElection = true
	opts.WebhookService = release // as in the cluster: the API server would call the Service
	opts.WebhookTimeout = 3 * time.Second
	guard := startGuard(cluster, opts)
	defer guard.stop(t)
	logs, audit := &guard.logs, &guard.audit

	registered := func() error {
		guard.running(t)
		out, err := kubectl("get", "validatingwebhookconfiguration", release, "-o",
			"jsonpath={.webhooks[0].failurePolicy} {.webhooks[0].timeoutSeconds} {.webhooks[0].namespaceSelector.matchExpressions[0].values} {.webhooks[0].clientConfig.caBundle}")
		if err != nil {
			return err
		}
		f := strings.Fields(out)
		if len(f) != 4 || f[0] != "Ignore" || f[1] != "3" || !strings.Contains(f[2], releaseNS) || len(f[3]) < 100 {
			return fmt.Errorf("not the guard's registration: %q", out)
		}
		return nil
	}
	defer func() {
		if t.Failed() {
			t.Logf("guard log:\n%s", logs.String())
		}
	}()
	wait.Eventually(t, 30*time.Second, "the guard fills in the webhook configuration", registered)
	ca, err := kubectl("get", "secret", release+"-webhook-tls", "-n", releaseNS, "-o", `jsonpath={.data.ca\.crt}`)
	if err != nil || ca == "" {
		t.Fatalf("the guard did not fill the certificate secret: %v", err)
	}

	// helm upgrade with other values: no conflict with the guard's fields,
	// and nothing of the guard's undone (the new pods would register the
	// new values).
	helm(t, cluster.AdminKubeconfig, "upgrade", release, chart, "--namespace", releaseNS,
		"--set", "webhook.failurePolicy=Fail", "--set", "webhook.timeoutSeconds=7", "--set", "replicas=3")
	if err := registered(); err != nil {
		t.Fatalf("helm upgrade undid the guard's registration: %v", err)
	}
	if out, _ := kubectl("get", "secret", release+"-webhook-tls", "-n", releaseNS, "-o", `jsonpath={.data.ca\.crt}`); out != ca {
		t.Fatal("helm upgrade replaced the certificates")
	}
	if strings.Contains(audit.String(), `"type":"protection"`) && strings.Contains(audit.String(), "WebhookConfiguration") {
		t.Fatalf("the guard saw the upgrade as tampering:\n%s", audit.String())
	}

	// helm uninstall with the guard still running (its pods outlive the
	// Deployment for a moment): nothing comes back.
	helm(t, cluster.AdminKubeconfig, "uninstall", release, "--namespace", releaseNS)
	wait.Eventually(t, 30*time.Second, "the guard sees the uninstall", func() error {
		s := logs.String()
		if !strings.Contains(s, "webhook configuration deleted while the guard's Deployment is gone") ||
			!strings.Contains(s, "certificate secret deleted while the guard's Deployment is gone") {
			return fmt.Errorf("no decision logged yet")
		}
		return nil
	})
	for _, args := range [][]string{
		{"get", "validatingwebhookconfiguration", release},
		{"get", "mutatingwebhookconfiguration", release},
		{"get", "secret", release + "-webhook-tls", "-n", releaseNS},
	} {
		if out, err := kubectl(args...); err == nil {
			t.Errorf("%v is back after uninstall: %s", args, out)
		}
	}
}

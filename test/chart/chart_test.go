// Package chart lints, renders and installs charts/driftguard with a real
// helm into a real API server.
package chart

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/driftguard/driftguard/devenv"
)

func helm(t *testing.T, kubeconfig string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, filepath.Join(devenv.DefaultBinDir(), "helm"), args...)
	home := t.TempDir()
	cmd.Env = append(os.Environ(), "HELM_CACHE_HOME="+home, "HELM_CONFIG_HOME="+home, "HELM_DATA_HOME="+home)
	if kubeconfig != "" {
		cmd.Env = append(cmd.Env, "KUBECONFIG="+kubeconfig)
	}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("helm %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

func chartDir(t *testing.T) string {
	t.Helper()
	chart, err := filepath.Abs("../../charts/driftguard")
	if err != nil {
		t.Fatal(err)
	}
	return chart
}

func TestChart(t *testing.T) {
	chart := chartDir(t)
	helm(t, "", "lint", "--strict", chart)
	out := helm(t, "", "template", "guard", chart, "--namespace", "driftguard-system", "--set", "policy.breakGlassGroups={sre,oncall}", "--set", "replicas=2",
		"--set", "policy.configMap=policies", "--set", "ignoreRules[0].kind=Deployment", "--set", "ignoreRules[0].jsonPointers[0]=/spec/replicas", "--set", "receiver.enabled=true")
	for _, want := range []string{
		"kind: Deployment", "kind: Service", "kind: ClusterRoleBinding", "kind: Role", "--webhook-service=guard-driftguard",
		"--break-glass-groups=sre,oncall", "--leader-elect=true", "readOnlyRootFilesystem: true", "runAsNonRoot: true",
		"--policy-dir=/policy", "name: policies", "--ignore-file=/config/ignore.yaml", "- /spec/replicas", "--receiver-addr=:9292", "--failure-policy=Ignore", "--webhook-timeout=3s", "kind: ValidatingWebhookConfiguration",
		"kind: PodDisruptionBudget", "--cert-secret=guard-driftguard-webhook-tls",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("rendered chart lacks %q", want)
		}
	}

	cluster, err := devenv.Start(context.Background(), devenv.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer cluster.Stop()
	helm(t, cluster.AdminKubeconfig, "install", "guard", chart, "--namespace", "driftguard-system", "--create-namespace")
	for _, args := range [][]string{
		{"get", "crd", "guards.driftguard.io"},
		{"get", "deployment", "guard-driftguard", "-n", "driftguard-system"},
		{"get", "service", "guard-driftguard", "-n", "driftguard-system"},
		{"get", "serviceaccount", "guard-driftguard", "-n", "driftguard-system"},
		{"get", "secret", "guard-driftguard-webhook-tls", "-n", "driftguard-system"},
	} {
		if out, errOut, err := cluster.Kubectl(context.Background(), "", args...); err != nil {
			t.Errorf("kubectl %v after install: %v %s %s", args, err, out, errOut)
		}
	}
	// An upgrade keeps the certificates the guard put in its Secret.
	if out, _, err := cluster.Kubectl(context.Background(), "", "patch", "secret", "guard-driftguard-webhook-tls", "-n", "driftguard-system",
		"-p", `{"data":{"ca.crt":"Q0E="}}`); err != nil {
		t.Fatalf("fill the certificate secret: %v %s", err, out)
	}
	get := func() string {
		out, _, err := cluster.Kubectl(context.Background(), "", "get", "secret", "guard-driftguard-webhook-tls", "-n", "driftguard-system", "-o", "jsonpath={.data.ca\\.crt}")
		if err != nil || out == "" {
			t.Fatalf("read webhook CA: %v", err)
		}
		return out
	}
	ca := get()
	helm(t, cluster.AdminKubeconfig, "upgrade", "guard", chart, "--namespace", "driftguard-system", "--set", "replicas=3")
	if get() != ca {
		t.Fatal("helm upgrade replaced the webhook certificate")
	}
	helm(t, cluster.AdminKubeconfig, "uninstall", "guard", "--namespace", "driftguard-system")
}

package chart

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/driftguard/driftguard/api/v1alpha1"
	"github.com/driftguard/driftguard/app"
	"github.com/driftguard/driftguard/test/wait"
)

// TestRBAC installs the chart with helm and runs the guard in this process
// as the chart's ServiceAccount (impersonation): it can do everything it
// needs with the least-privilege ClusterRole, and a kind the RBAC does not
// grant is reported on its Guard, naming the kind and the permission.
func TestRBAC(t *testing.T) {
	chart := chartDir(t)
	cluster := startCluster(t)
	helm(t, cluster.AdminKubeconfig, "install", release, chart, "--namespace", releaseNS, "--create-namespace", "--set", "replicas=1")
	git := startGit(t)
	pushRepo(t, git, "allowed", map[string]string{
		"ns.yaml":       "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: team-a\n",
		"settings.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings\n  namespace: team-a\ndata:\n  color: blue\n",
		// kube-system is never sent to the webhook: a change there is
		// admitted, and only the informer (the guard's RBAC) reverts it.
		"cluster.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cluster-settings\n  namespace: kube-system\ndata:\n  region: eu\n",
	})
	pushRepo(t, git, "denied", map[string]string{
		"ns.yaml":     "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: team-b\n",
		"secret.yaml": "apiVersion: v1\nkind: Secret\nmetadata:\n  name: creds\n  namespace: team-b\nstringData:\n  token: s3cret\n",
	})

	// The guard, as the chart's ServiceAccount.
	opts := chartOptions(t)
	opts.LeaderElection = true
	guard := startGuard(cluster, opts)
	defer guard.stop(t)

	admin, err := client.New(cluster.Config, client.Options{Scheme: app.Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"allowed", "denied"} {
		g := &v1alpha1.Guard{ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: v1alpha1.GuardSpec{Git: &v1alpha1.GitSource{URL: git.URL(name), Ref: "main"}, Prune: true, Interval: metav1.Duration{Duration: 2 * time.Second}}}
		if err := admin.Create(context.Background(), g); err != nil {
			t.Fatal(err)
		}
	}
	ready := func(name string) (*metav1.Condition, error) {
		var g v1alpha1.Guard
		if err := admin.Get(context.Background(), client.ObjectKey{Name: name}, &g); err != nil {
			return nil, err
		}
		c := meta.FindStatusCondition(g.Status.Conditions, v1alpha1.ConditionReady)
		if c == nil {
			return nil, fmt.Errorf("guard %s has no Ready condition yet", name)
		}
		return c, nil
	}
	kubectl := kubectlOf(cluster)

	// An allowed kind is applied.
	wait.Eventually(t, 60*time.Second, "guard allowed applies", func() error {
		c, err := ready("allowed")
		if err != nil {
			return err
		}
		if c.Status != metav1.ConditionTrue {
			return fmt.Errorf("Ready %s: %s", c.Status, c.Message)
		}
		return nil
	})
	if out, err := kubectl("get", "configmap", "settings", "-n", "team-a", "-o", "jsonpath={.data.color}"); err != nil || out != "blue" {
		t.Fatalf("team-a/settings: %q %v", out, err)
	}

	// A kind the RBAC does not grant: the Guard's Ready condition names the
	// kind and the permission missing.
	var msg string
	wait.Eventually(t, 60*time.Second, "guard denied reports the missing permission", func() error {
		c, err := ready("denied")
		if err != nil {
			return err
		}
		msg = c.Message
		for _, want := range []string{"kind Secret", "resource secrets", "cannot patch", "rbac.managedResources"} {
			if c.Status != metav1.ConditionFalse || !strings.Contains(c.Message, want) {
				return fmt.Errorf("Ready %s: %q lacks %q", c.Status, c.Message, want)
			}
		}
		return nil
	})
	t.Logf("Ready condition of the Guard with a Secret: %s", msg)
	if out, err := kubectl("get", "secret", "creds", "-n", "team-b"); err == nil {
		t.Fatalf("secret team-b/creds was created without RBAC: %s", out)
	}

	// The webhook works with the chart's RBAC: it registered itself, and it
	// denies a change to a managed object.
	out, err := kubectl("patch", "configmap", "settings", "-n", "team-a", "-p", `{"data":{"color":"red"}}`)
	if err == nil || !strings.Contains(out, "driftguard") {
		t.Fatalf("patch of a managed ConfigMap not denied by the webhook: %v %s", err, out)
	}
	// Drift the webhook never sees (kube-system) is reverted with the
	// guard's RBAC, and recorded as an Event.
	if out, err := kubectl("patch", "configmap", "cluster-settings", "-n", "kube-system", "-p", `{"data":{"region":"us"}}`); err != nil {
		t.Fatalf("patch kube-system/cluster-settings: %v %s", err, out)
	}
	wait.Eventually(t, 30*time.Second, "kube-system/cluster-settings reverted", func() error {
		out, err := kubectl("get", "configmap", "cluster-settings", "-n", "kube-system", "-o", "jsonpath={.data.region}")
		if err != nil || out != "eu" {
			return fmt.Errorf("region %q %v", out, err)
		}
		return nil
	})
	wait.Eventually(t, 30*time.Second, "an Event records the revert", func() error {
		out, err := kubectl("get", "events", "-n", "kube-system", "--field-selector", "involvedObject.name=cluster-settings", "-o", "name")
		if err != nil || out == "" {
			return fmt.Errorf("no event: %q %v", out, err)
		}
		return nil
	})
	// The certificates are in the chart's Secret.
	if out, err := kubectl("get", "secret", release+"-webhook-tls", "-n", releaseNS, "-o", "jsonpath={.data.ca\\.key}"); err != nil || out == "" {
		t.Fatalf("certificate secret not filled: %q %v", out, err)
	}
	// The leader lease lives in the release namespace.
	if out, err := kubectl("get", "lease", "driftguard.driftguard.io", "-n", releaseNS, "-o", "jsonpath={.spec.holderIdentity}"); err != nil || out == "" {
		t.Fatalf("leader lease: %q %v", out, err)
	}

	// Nothing of the guard's own machinery was forbidden: the only
	// "forbidden" in its log is about the Secret kind it was not granted.
	for _, line := range strings.Split(guard.logs.String(), "\n") {
		if strings.Contains(strings.ToLower(line), "forbidden") && !strings.Contains(line, "secrets") {
			t.Errorf("forbidden in the guard's log, not about the kind it was denied:\n%s", line)
		}
	}
}

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

// TestRBACPerGuardIdentity installs the chart with rbac.clusterWide=false
// and a tenant, and runs the guard in this process as the chart's
// ServiceAccount: the guard itself may only read the managed kinds, so
// what is applied is applied as the tenant's account, in the tenant's
// namespace only; an object in another namespace is refused naming the
// account, and is not created.
func TestRBACPerGuardIdentity(t *testing.T) {
	chart := chartDir(t)
	cluster := startCluster(t)
	kubectl := kubectlOf(cluster)
	for _, ns := range []string{"team-a", "team-b"} {
		if out, err := kubectl("create", "namespace", ns); err != nil {
			t.Fatalf("create namespace %s: %v %s", ns, err, out)
		}
	}
	helm(t, cluster.AdminKubeconfig, "install", release, chart, "--namespace", releaseNS, "--create-namespace",
		"--set", "replicas=1", "--set", "rbac.clusterWide=false", "--set", "rbac.impersonation.defaultServiceAccount=team-a",
		"--set", "rbac.tenants[0].name=team-a", "--set", "rbac.tenants[0].namespaces={team-a}")

	git := startGit(t)
	pushRepo(t, git, "tenant", map[string]string{
		"settings.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings\n  namespace: team-a\ndata:\n  color: blue\n",
		"steal.yaml":    "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: steal\n  namespace: team-b\ndata:\n  color: red\n",
	})

	// The guard, as the chart's ServiceAccount, with the chart's flags.
	opts := chartOptions(t)
	opts.DefaultServiceAccount = "team-a"
	guard := startGuard(cluster, opts)
	defer guard.stop(t)

	admin, err := client.New(cluster.Config, client.Options{Scheme: app.Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	g := &v1alpha1.Guard{ObjectMeta: metav1.ObjectMeta{Name: "tenant"},
		Spec: v1alpha1.GuardSpec{Git: &v1alpha1.GitSource{URL: git.URL("tenant"), Ref: "main"}, Interval: metav1.Duration{Duration: 2 * time.Second}}}
	if err := admin.Create(context.Background(), g); err != nil {
		t.Fatal(err)
	}
	var msg string
	wait.Eventually(t, 60*time.Second, "the Guard refuses team-b's object as team-a", func() error {
		var cur v1alpha1.Guard
		if err := admin.Get(context.Background(), client.ObjectKey{Name: "tenant"}, &cur); err != nil {
			return err
		}
		c := meta.FindStatusCondition(cur.Status.Conditions, v1alpha1.ConditionReady)
		if c == nil {
			return fmt.Errorf("no Ready condition yet")
		}
		msg = c.Message
		for _, want := range []string{"service account " + releaseNS + "/team-a", "--default-service-account", "configmaps in namespace team-b"} {
			if c.Status != metav1.ConditionFalse || c.Reason != v1alpha1.ReasonForbidden || !strings.Contains(c.Message, want) {
				return fmt.Errorf("Ready %s %s: %q lacks %q", c.Status, c.Reason, c.Message, want)
			}
		}
		return nil
	})
	t.Logf("Ready condition: %s", msg)
	wait.Eventually(t, 30*time.Second, "team-a/settings applied as team-a", func() error {
		out, err := kubectl("get", "configmap", "settings", "-n", "team-a", "-o", "jsonpath={.data.color}")
		if err != nil || out != "blue" {
			return fmt.Errorf("team-a/settings: %q %v", out, err)
		}
		return nil
	})
	if out, err := kubectl("get", "configmap", "steal", "-n", "team-b"); err == nil {
		t.Fatalf("team-b/steal was created: %s", out)
	}
	// The guard's own account may not write a ConfigMap anywhere: the
	// chart closed it (a check of the RBAC, as the API server decides it).
	if out, err := kubectl("auth", "can-i", "create", "configmaps", "-n", "team-b", "--as", "system:serviceaccount:"+releaseNS+":"+release); err == nil || out != "no" {
		t.Errorf("the guard's own account may create ConfigMaps in team-b with clusterWide=false: %q %v", out, err)
	}
	if out, err := kubectl("auth", "can-i", "impersonate", "serviceaccounts", "-n", "team-b", "--as", "system:serviceaccount:"+releaseNS+":"+release); err == nil || out != "no" {
		t.Errorf("the guard may impersonate service accounts outside its namespace: %q %v", out, err)
	}
}

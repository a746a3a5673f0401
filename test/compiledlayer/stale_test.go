package compiledlayer

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/driftguard/driftguard/api/v1alpha1"
	"github.com/driftguard/driftguard/compiled"
	"github.com/driftguard/driftguard/test/wait"
)

// When every binding with a ConfigMap parameter is gone for a moment (here
// an admin removes the guard's, its canary's included, while the guard is
// down), the API server stops its cache of ConfigMap parameters for good
// (kubernetes/kubernetes#130887) and its policies read each index as it
// was. The guard's canary tells it so when a new revision does not reach
// the API server: it says why in its log and leaves every change to its
// webhooks, which deny the edit of an object the stale index does not hold.
//
// This test leaves the control plane's cache stopped: it runs last (Go runs
// the tests of a package in the order of their files' names).
func TestStaleParameterCacheIsReported(t *testing.T) {
	const ns, guard = "stale", "stale"
	ctx := context.Background()
	repo, rev := gitNamespace(t, ns, map[string]string{"settings.yaml": configMap(ns, "settings", "  a: \"1\"\n")})
	g := &v1alpha1.Guard{
		ObjectMeta: metav1.ObjectMeta{Name: guard},
		Spec:       v1alpha1.GuardSpec{Git: &v1alpha1.GitSource{URL: git.URL(guard), Ref: "main"}, Interval: metav1.Duration{Duration: 30 * time.Second}, Prune: true},
	}
	if err := admin.Create(ctx, g); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(workDir, t.Name())
	p := startGuard(t, dir, "compiled", nil)
	waitIndexed(t, ns, compiled.Key("", "configmaps", "settings"), "settings.yaml:1", rev)
	if err := p.Stop(); err != nil {
		t.Fatal(err)
	}

	// Every binding with a ConfigMap parameter goes, for longer than the
	// API server's policy refresh (a second).
	if err := admin.DeleteAllOf(ctx, &admissionregistrationv1.ValidatingAdmissionPolicyBinding{}, client.MatchingLabels{compiled.CompiledLabel: webhookName}); err != nil {
		t.Fatal(err)
	}
	time.Sleep(3 * time.Second) // a stretch of time the bug needs, not a wait for a condition

	rev2 := commit(t, repo, "add a ConfigMap", map[string]string{"added.yaml": configMap(ns, "added", "  a: \"1\"\n")})
	p = startGuard(t, dir, "compiled", nil)
	waitIndexed(t, ns, compiled.Key("", "configmaps", "added"), "added.yaml:1", rev2)
	wait.Eventually(t, 90*time.Second, "the guard logs that the API server reads an old index", func() error {
		b, err := os.ReadFile(p.LogPath)
		if err != nil {
			return err
		}
		if !strings.Contains(string(b), "the API server still reads an old compiled index") {
			return errors.New("not in the log yet")
		}
		return nil
	})
	// The webhook decides what the stale index would have admitted.
	wait.Eventually(t, 30*time.Second, "the webhook denies an edit of the object the stale index lacks", func() error {
		_, _, err := cluster.Kubectl(ctx, aliceKubeconfig, "-n", ns, "label", "configmap", "added", "team=eve", "--dry-run=server")
		if err == nil || !strings.Contains(err.Error(), "admission webhook") {
			return fmt.Errorf("kubectl label: %v", err)
		}
		return nil
	})
}

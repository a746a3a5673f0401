package reconcile_test

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/go-logr/logr/testr"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/driftguard/driftguard/api/v1alpha1"
	"github.com/driftguard/driftguard/apply"
	"github.com/driftguard/driftguard/audit"
	"github.com/driftguard/driftguard/config"
	"github.com/driftguard/driftguard/devenv"
	"github.com/driftguard/driftguard/gitserver"
	"github.com/driftguard/driftguard/reconcile"
	"github.com/driftguard/driftguard/render"
	"github.com/driftguard/driftguard/source"
	"github.com/driftguard/driftguard/test/wait"
)

// The Guard controller alone, on a real kube-apiserver and a real Git
// server on loopback, without the rest of the guard (no drift watcher,
// webhook or health): a Guard is reconciled to its revision, the object in
// Git exists with the guard's label, and the Guard says Ready with that
// revision. The end-to-end suites (test/e2e) show the same with everything
// wired; this one fails close to the controller, in seconds.
func TestGuardControllerAppliesARevision(t *testing.T) {
	devenv.RequireBinaries(t, false)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	dir := t.TempDir()
	log := testr.New(t)
	crds := filepath.Join(dir, "crds")
	if err := config.WriteCRDs(crds); err != nil {
		t.Fatal(err)
	}
	cluster, err := devenv.Start(ctx, devenv.Options{CRDDirs: []string{crds}, Dir: filepath.Join(dir, "cluster"), Log: log})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cluster.Stop() })
	git, err := gitserver.Start(filepath.Join(dir, "git"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = git.Close() })
	repo, err := git.NewRepo("app")
	if err != nil {
		t.Fatal(err)
	}
	if err := repo.WriteFile("cm.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings\n  namespace: default\ndata:\n  greeting: from git\n"); err != nil {
		t.Fatal(err)
	}
	rev, err := repo.CommitAndPush("a ConfigMap")
	if err != nil {
		t.Fatal(err)
	}

	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, v1alpha1.AddToScheme} {
		if err := add(scheme); err != nil {
			t.Fatal(err)
		}
	}
	mgr, err := ctrl.NewManager(cluster.Config, ctrl.Options{Scheme: scheme, Logger: log, Metrics: metricsserver.Options{BindAddress: "0"}})
	if err != nil {
		t.Fatal(err)
	}
	auditLog := audit.NewLogger(log, 100)
	rec := &reconcile.GuardReconciler{
		Client: mgr.GetClient(), Fetcher: source.NewGitFetcher(filepath.Join(dir, "gitcache"), log), Store: render.NewStore(),
		Applier: &apply.Applier{Client: mgr.GetClient(), Reader: mgr.GetAPIReader()},
		Audit:   auditLog, SecretNamespace: "default", DefaultInterval: time.Hour, Log: log,
	}
	if err := rec.SetupWithManager(mgr); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	t.Cleanup(func() { cancel(); <-done })

	admin := mgr.GetClient()
	g := &v1alpha1.Guard{ObjectMeta: metav1.ObjectMeta{Name: "app"},
		Spec: v1alpha1.GuardSpec{Git: &v1alpha1.GitSource{URL: git.URL("app"), Ref: "main"}, Interval: metav1.Duration{Duration: time.Hour}}}
	if err := admin.Create(ctx, g); err != nil {
		t.Fatal(err)
	}
	wait.Eventually(t, 60*time.Second, "guard app Ready at "+rev[:7], func() error {
		if err := admin.Get(ctx, client.ObjectKeyFromObject(g), g); err != nil {
			return err
		}
		if !meta.IsStatusConditionTrue(g.Status.Conditions, v1alpha1.ConditionReady) || g.Status.LastAppliedRevision != rev {
			return fmt.Errorf("revision %q, conditions %+v", g.Status.LastAppliedRevision, g.Status.Conditions)
		}
		return nil
	})
	var cm corev1.ConfigMap
	if err := mgr.GetAPIReader().Get(ctx, client.ObjectKey{Namespace: "default", Name: "settings"}, &cm); err != nil {
		t.Fatal(err)
	}
	if cm.Data["greeting"] != "from git" || cm.Labels[apply.GuardLabel] != "app" {
		t.Errorf("ConfigMap settings: data %v, labels %v; want the data of Git and %s=app", cm.Data, cm.Labels, apply.GuardLabel)
	}
	if g.Status.ManagedObjects != 1 {
		t.Errorf("status.managedObjects %d, want 1", g.Status.ManagedObjects)
	}
}

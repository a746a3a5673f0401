package app_test

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/go-logr/logr/testr"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/driftguard/driftguard/api/v1alpha1"
	"github.com/driftguard/driftguard/app"
	"github.com/driftguard/driftguard/devenv"
	"github.com/driftguard/driftguard/test/harness"
	"github.com/driftguard/driftguard/test/wait"
)

// The whole guard's wiring on a real kube-apiserver and Git server: Run
// starts the manager with every component registered (the webhook
// configuration is registered, a Guard is reconciled to its revision), and
// returns nil once its context ends, without the end-to-end suites' cases.
func TestRunStartsAndStopsCleanly(t *testing.T) {
	devenv.RequireBinaries(t, false)
	e, err := harness.StartEnv(harness.EnvOptions{Dir: t.TempDir()})
	t.Cleanup(e.Stop)
	if err != nil {
		t.Fatal(err)
	}
	repo, err := e.Git.NewRepo("app")
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

	opts := app.DefaultOptions()
	opts.WebhookAddr, opts.MetricsAddr, opts.HealthAddr = "127.0.0.1:0", "0", "0"
	opts.GitCacheDir = filepath.Join(e.Dir, "gitcache")
	opts.WebhookConfigName = "driftguard-wiring"
	port, err := harness.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	opts.ReceiverAddr, opts.ReceiverToken = fmt.Sprintf("127.0.0.1:%d", port), harness.RandomToken()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- app.Run(ctx, e.GuardRESTConfig, opts, testr.New(t), &harness.Records{}) }()
	running := func() error {
		select {
		case err := <-done:
			return wait.Stop(fmt.Errorf("Run returned early: %w", err))
		default:
			return nil
		}
	}

	wait.Eventually(t, 60*time.Second, "webhook configuration "+opts.WebhookConfigName, func() error {
		if err := running(); err != nil {
			return err
		}
		_, err := e.Kube.AdmissionregistrationV1().ValidatingWebhookConfigurations().Get(ctx, opts.WebhookConfigName, metav1.GetOptions{})
		return err
	})
	g := &v1alpha1.Guard{ObjectMeta: metav1.ObjectMeta{Name: "app"},
		Spec: v1alpha1.GuardSpec{Git: &v1alpha1.GitSource{URL: e.Git.URL("app"), Ref: "main"}, Interval: metav1.Duration{Duration: time.Hour}}}
	if err := e.Admin.Create(ctx, g); err != nil {
		t.Fatal(err)
	}
	wait.Eventually(t, 60*time.Second, "guard app Ready at "+rev[:7], func() error {
		if err := running(); err != nil {
			return err
		}
		if err := e.Admin.Get(ctx, client.ObjectKeyFromObject(g), g); err != nil {
			return err
		}
		if !meta.IsStatusConditionTrue(g.Status.Conditions, v1alpha1.ConditionReady) || g.Status.LastAppliedRevision != rev {
			return fmt.Errorf("revision %q, conditions %+v", g.Status.LastAppliedRevision, g.Status.Conditions)
		}
		return nil
	})

	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Run after its context ended: %v", err)
		}
	case <-time.After(2 * time.Minute): // a bound on a hang, not a figure
		t.Fatal("Run did not return after its context ended")
	}
}

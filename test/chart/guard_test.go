package chart

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/rest"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/driftguard/driftguard/app"
	"github.com/driftguard/driftguard/devenv"
	"github.com/driftguard/driftguard/gitserver"
	"github.com/driftguard/driftguard/test/harness"
)

const (
	releaseNS = "driftguard-system"
	// release "driftguard": every resource is named "driftguard".
	release = "driftguard"
)

// startCluster starts the embedded cluster, stopped at the test's end.
func startCluster(t *testing.T) *devenv.Cluster {
	t.Helper()
	cluster, err := devenv.Start(context.Background(), devenv.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cluster.Stop() })
	return cluster
}

// kubectlOf runs kubectl on cluster as its admin, for 30 s at most, and
// answers its output and error output, trimmed.
func kubectlOf(cluster *devenv.Cluster) func(args ...string) (string, error) {
	return func(args ...string) (string, error) {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		out, errOut, err := cluster.Kubectl(ctx, "", args...)
		return strings.TrimSpace(out + errOut), err
	}
}

// startGit starts a Git server on loopback, closed at the test's end.
func startGit(t *testing.T) *gitserver.Server {
	t.Helper()
	git, err := gitserver.Start(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = git.Close() })
	return git
}

// pushRepo makes repository name on git, holding files in one commit.
func pushRepo(t *testing.T, git *gitserver.Server, name string, files map[string]string) {
	t.Helper()
	r, err := git.NewRepo(name)
	if err != nil {
		t.Fatal(err)
	}
	for p, c := range files {
		if err := r.WriteFile(p, c); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := r.CommitAndPush("initial"); err != nil {
		t.Fatal(err)
	}
}

// chartOptions are the guard's options as the chart runs it: in the
// release's namespace, left out of its own webhook with kube-system, its
// certificates in the chart's Secret, its Deployment watched by name.
func chartOptions(t *testing.T) app.Options {
	opts := app.DefaultOptions()
	opts.Namespace = releaseNS
	opts.WebhookAddr = "127.0.0.1:0"
	opts.MetricsAddr, opts.HealthAddr = "0", "0"
	opts.GitCacheDir = filepath.Join(t.TempDir(), "git")
	opts.WebhookConfigName = release
	opts.ExcludeNamespaces = []string{"kube-system", releaseNS}
	opts.CertSecret = release + "-webhook-tls"
	opts.DeploymentName = release
	return opts
}

// chartGuard is the guard run in this process as the chart's
// ServiceAccount (impersonation).
type chartGuard struct {
	logs, audit harness.Buffer
	cancel      context.CancelFunc
	done        chan struct{} // closed when the run ended, with err
	err         error
}

// startGuard runs the guard with opts as the chart's ServiceAccount.
func startGuard(cluster *devenv.Cluster, opts app.Options) *chartGuard {
	g := &chartGuard{done: make(chan struct{})}
	log := zap.New(zap.WriteTo(&g.logs))
	ctrllog.SetLogger(log)
	cfg := rest.CopyConfig(cluster.Config)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: "system:serviceaccount:" + releaseNS + ":" + release}
	ctx, cancel := context.WithCancel(context.Background())
	g.cancel = cancel
	go func() {
		defer close(g.done)
		g.err = app.Run(ctx, cfg, opts, log, &g.audit)
	}()
	return g
}

// running fails the test when the guard stopped by itself.
func (g *chartGuard) running(t *testing.T) {
	t.Helper()
	select {
	case <-g.done:
		t.Fatalf("guard stopped: %v", g.err)
	default:
	}
}

// stop stops the guard and waits for it; an error of its run, or a guard
// still running 30 s later, fails the test.
func (g *chartGuard) stop(t *testing.T) {
	t.Helper()
	g.cancel()
	select {
	case <-g.done:
		if g.err != nil {
			t.Errorf("guard: %v", g.err)
		}
	case <-time.After(30 * time.Second):
		t.Error("guard did not stop within 30s")
	}
}

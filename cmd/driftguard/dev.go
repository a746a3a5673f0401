package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"github.com/go-logr/logr"
	"github.com/spf13/cobra"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/driftguard/driftguard/api/v1alpha1"
	"github.com/driftguard/driftguard/app"
	"github.com/driftguard/driftguard/config"
	"github.com/driftguard/driftguard/devenv"
	"github.com/driftguard/driftguard/gitserver"
)

func newDevCommand(logs *logOptions) *cobra.Command {
	opts := app.DefaultOptions()
	opts.WebhookAddr = "127.0.0.1:0"
	opts.MetricsAddr, opts.HealthAddr = "0", "0"
	// The demo shows self-heal by deleting the webhook configuration;
	// --self-protect puts it back at once instead.
	opts.SelfProtect = false
	var examples, dir string
	var interval time.Duration
	var plain bool
	cmd := &cobra.Command{
		Use:   "dev",
		Short: "Run the guard on an embedded local cluster with a Git server holding the examples",
		Long: `dev starts a real kube-apiserver and etcd, kube-controller-manager, kube-scheduler
and KWOK-simulated nodes (so Deployments roll out), a Git server on loopback
holding --examples as a repository, and the guard with a Guard for it.
Ctrl-C stops everything. Binaries come from tools/build.sh.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runDev(cmd.Context(), logs.logger(), opts, examples, dir, interval, !plain)
		},
	}
	cmd.Flags().StringVar(&examples, "examples", "examples/shop", "folder of manifests to put in the demo repository")
	cmd.Flags().StringVar(&dir, "dir", "", "keep kubeconfigs, logs and the Git repositories here (default: a temporary folder)")
	cmd.Flags().DurationVar(&interval, "interval", 10*time.Second, "full reconcile interval of the demo Guard")
	cmd.Flags().BoolVar(&plain, "no-simulation", false, "start only kube-apiserver and etcd (no controllers, nodes or pods)")
	opts.BindFlags(cmd.Flags())
	return cmd
}

func runDev(ctx context.Context, log logr.Logger, opts app.Options, examples, dir string, interval time.Duration, simulated bool) error {
	if _, err := os.Stat(examples); err != nil {
		return fmt.Errorf("--examples: %w", err)
	}
	if dir == "" {
		tmp, err := os.MkdirTemp("", "driftguard-dev-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(tmp)
		dir = tmp
	}
	cluster, err := startDevCluster(ctx, log, dir, simulated)
	if err != nil {
		return err
	}
	defer func() {
		if err := cluster.Stop(); err != nil {
			log.Error(err, "stop local cluster")
		}
	}()
	git, repo, err := startDemoRepo(dir, examples)
	if err != nil {
		return err
	}
	defer func() {
		if err := git.Close(); err != nil {
			log.Error(err, "stop Git server")
		}
	}()
	if err := receivePushes(log, git, &opts); err != nil {
		return err
	}
	_, guardCfg, err := cluster.AddUser("driftguard", []string{"system:masters"})
	if err != nil {
		return err
	}
	userKubeconfig, _, err := cluster.AddUser("alice", []string{"system:masters"})
	if err != nil {
		return err
	}
	if err := createDemoGuard(ctx, cluster.Config, git.URL("shop"), interval); err != nil {
		return err
	}
	printDevHelp(userKubeconfig, git.URL("shop"), repo.Dir, interval)
	return app.Run(ctx, guardCfg, opts, log, os.Stdout)
}

// startDevCluster writes the CRDs under dir and starts the local cluster
// with them.
func startDevCluster(ctx context.Context, log logr.Logger, dir string, simulated bool) (*devenv.Cluster, error) {
	crdDir := filepath.Join(dir, "crds")
	if err := config.WriteCRDs(crdDir); err != nil {
		return nil, err
	}
	log.Info("starting local cluster", "simulated", simulated)
	return devenv.Start(ctx, devenv.Options{Simulated: simulated, CRDDirs: []string{crdDir}, Dir: filepath.Join(dir, "cluster"), Log: log.WithName("cluster")})
}

// startDemoRepo starts the Git server on loopback with the repository
// "shop" holding examples. The server is closed when err is set.
func startDemoRepo(dir, examples string) (_ *gitserver.Server, _ *gitserver.Repo, err error) {
	git, err := gitserver.Start(filepath.Join(dir, "git"))
	if err != nil {
		return nil, nil, err
	}
	defer func() {
		if err != nil {
			_ = git.Close()
		}
	}()
	repo, err := git.NewRepo("shop")
	if err != nil {
		return nil, nil, err
	}
	if err := repo.CopyDir(examples, ""); err != nil {
		return nil, nil, err
	}
	if _, err := repo.CommitAndPush("shop: initial manifests"); err != nil {
		return nil, nil, err
	}
	return git, repo, nil
}

// receivePushes: pushes to the demo repository reach the guard's push
// receiver at once, as a Git host's webhook would. It sets the receiver's
// address and token in opts when unset.
func receivePushes(log logr.Logger, git *gitserver.Server, opts *app.Options) error {
	if opts.ReceiverAddr == "" {
		port, err := freeLoopbackPort()
		if err != nil {
			return err
		}
		opts.ReceiverAddr = fmt.Sprintf("127.0.0.1:%d", port)
	}
	hook := "http://" + opts.ReceiverAddr + "/hook"
	if opts.ReceiverToken == "" && !opts.ReceiverAllowUnauthenticated {
		// The receiver refuses pushes without a token: the demo's Git
		// server gets one of its own.
		opts.ReceiverToken = rand.Text()
	}
	token := opts.ReceiverToken
	git.OnPush(func(url string) { notifyPush(log, hook, token, url) })
	return nil
}

// createDemoGuard creates the Guard "shop" of the demo repository at url.
func createDemoGuard(ctx context.Context, cfg *rest.Config, url string, interval time.Duration) error {
	c, err := client.New(cfg, client.Options{Scheme: app.Scheme()})
	if err != nil {
		return err
	}
	selfHeal := true
	guard := &v1alpha1.Guard{
		ObjectMeta: metav1.ObjectMeta{Name: "shop"},
		Spec:       v1alpha1.GuardSpec{Git: &v1alpha1.GitSource{URL: url, Ref: "main"}, Interval: metav1.Duration{Duration: interval}, Prune: true, SelfHeal: &selfHeal},
	}
	if err := c.Create(ctx, guard); err != nil {
		return fmt.Errorf("create demo Guard: %w", err)
	}
	return nil
}

// printDevHelp tells the user what to try.
func printDevHelp(userKubeconfig, url, workDir string, interval time.Duration) {
	kubectl := filepath.Join(devenv.DefaultBinDir(), "kubectl")
	fmt.Fprintf(os.Stderr, `
driftguard is guarding a local cluster.
  kubeconfig (user alice):  %[1]s
  Git repository:           %[2]s  (working copy: %[3]s)

Try:
  %[4]s --kubeconfig %[1]s get guards,deploy,pods -A
  %[4]s --kubeconfig %[1]s scale deploy/web --replicas=5 -n shop        # denied: the message names the Git file
  %[4]s --kubeconfig %[1]s delete validatingwebhookconfiguration,mutatingwebhookconfiguration driftguard && \
    %[4]s --kubeconfig %[1]s patch configmap web-config -n shop -p '{"data":{"greeting":"hi"}}'   # reverted at once
Edit a file in %[3]s, then: git -C %[3]s commit -am change && git -C %[3]s push   # applied at once (push receiver), else at the next interval (%[5]s)
Ctrl-C stops everything.

`, userKubeconfig, url, workDir, kubectl, interval)
}

func freeLoopbackPort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

// notifyPush tells the guard's push receiver that url was pushed to.
func notifyPush(log logr.Logger, hook, token, url string) {
	body, _ := json.Marshal(map[string]string{"url": url})
	req, err := http.NewRequest(http.MethodPost, hook, bytes.NewReader(body))
	if err != nil {
		return
	}
	req.Header.Set("Content-Type", "application/json")
	if token != "" {
		req.Header.Set("X-Driftguard-Token", token)
	}
	resp, err := (&http.Client{Timeout: 5 * time.Second}).Do(req)
	if err != nil {
		log.V(1).Info("push notification not delivered", "error", err.Error())
		return
	}
	resp.Body.Close()
}

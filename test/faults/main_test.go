// Package faults injects faults while the guard works and checks that the
// cluster converges to Git afterwards and that no audit record is lost: an
// API server restart and a guard killed in the middle of an apply, the Git
// server down beyond the retry limit, a broken file among many, a policy
// that does not compile and one that runs out of time, a flood of manual
// edits, a full audit disk, and a watch that expired.
//
// Everything is real and on loopback: kube-apiserver and etcd (devenv), a Git
// server (gitserver), and the guard as a process of its own (`driftguard run`,
// built by the test), so it can be killed. The tests run one after another;
// each starts its own guard process and stops it at the end.
package faults

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/driftguard/driftguard/app"
	"github.com/driftguard/driftguard/config"
	"github.com/driftguard/driftguard/devenv"
	"github.com/driftguard/driftguard/gitserver"
	"github.com/driftguard/driftguard/test/harness"
)

var (
	cluster *devenv.Cluster
	git     *gitserver.Server
	admin   client.Client
	kube    kubernetes.Interface // admin, typed
	alice   kubernetes.Interface // a person with full RBAC rights whom the default policy denies
	// guardKubeconfig is the guard's identity (system:masters).
	guardKubeconfig string
	workDir         string
)

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	if missing := devenv.MissingBinaries("", false); len(missing) > 0 {
		fmt.Fprintf(os.Stderr, "faults: %v missing in %s: run tools/build.sh\n", missing, devenv.DefaultBinDir())
		return 1
	}
	var err error
	if workDir, err = os.MkdirTemp("", "driftguard-faults-"); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer func() {
		if os.Getenv("DRIFTGUARD_KEEP_FAULTS") == "" {
			_ = os.RemoveAll(workDir)
		} else {
			fmt.Fprintln(os.Stderr, "faults: kept", workDir)
		}
	}()
	if err := start(); err != nil {
		fmt.Fprintln(os.Stderr, "faults:", err)
		stop()
		return 1
	}
	defer stop()
	return m.Run()
}

func start() error {
	// Build first: a compile error should not wait for a control plane.
	if _, err := harness.Binary(); err != nil {
		return err
	}
	crds := filepath.Join(workDir, "crds")
	if err := config.WriteCRDs(crds); err != nil {
		return err
	}
	logFile, err := os.Create(filepath.Join(workDir, "test.log"))
	if err != nil {
		return err
	}
	log := zap.New(zap.WriteTo(logFile))
	ctrllog.SetLogger(log)
	if cluster, err = devenv.Start(context.Background(), devenv.Options{CRDDirs: []string{crds}, Dir: filepath.Join(workDir, "cluster"), Log: log}); err != nil {
		return err
	}
	if git, err = gitserver.Start(filepath.Join(workDir, "git")); err != nil {
		return err
	}
	if guardKubeconfig, _, err = cluster.AddUser("driftguard", []string{"system:masters"}); err != nil {
		return err
	}
	adminCfg := fast(cluster.Config)
	if admin, err = client.New(adminCfg, client.Options{Scheme: app.Scheme()}); err != nil {
		return err
	}
	if kube, err = kubernetes.NewForConfig(adminCfg); err != nil {
		return err
	}
	_, aliceCfg, err := cluster.AddUser("alice", []string{"system:masters", "dev"})
	if err != nil {
		return err
	}
	alice, err = kubernetes.NewForConfig(fast(aliceCfg))
	return err
}

func stop() {
	if git != nil {
		_ = git.Close()
	}
	if cluster != nil {
		_ = cluster.Stop()
	}
}

// fast lifts client-go's default 5 QPS.
func fast(c *rest.Config) *rest.Config {
	c = rest.CopyConfig(c)
	c.QPS, c.Burst = 1000, 1000
	return c
}

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
	"fmt"
	"os"
	"testing"

	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/driftguard/driftguard/devenv"
	"github.com/driftguard/driftguard/gitserver"
	"github.com/driftguard/driftguard/test/harness"
)

var (
	env     *harness.Env
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

func start() (err error) {
	// Build first: a compile error should not wait for a control plane.
	if _, err := harness.Binary(); err != nil {
		return err
	}
	env, err = harness.StartEnv(harness.EnvOptions{Dir: workDir})
	if err != nil {
		return err
	}
	cluster, git, admin, kube, guardKubeconfig = env.Cluster, env.Git, env.Admin, env.Kube, env.GuardKubeconfig
	alice, err = kubernetes.NewForConfig(env.Fast(env.AliceConfig))
	return err
}

func stop() {
	if env != nil {
		env.Stop()
	}
}

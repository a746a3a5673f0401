package harness

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/go-logr/logr"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/driftguard/driftguard/app"
	"github.com/driftguard/driftguard/config"
	"github.com/driftguard/driftguard/devenv"
	"github.com/driftguard/driftguard/gitserver"
)

// Env is a control plane (devenv, with the Guard CRD) and a Git server on
// loopback, with the users every suite needs, and no guard: the suites that
// run the guard as a process of their own (StartProcess) start it on one.
type Env struct {
	Cluster *devenv.Cluster
	Git     *gitserver.Server
	// Admin and Kube have full rights (not the guard's identity), without
	// client-go's default 5 QPS limit (EnvOptions.QPS).
	Admin client.Client
	Kube  kubernetes.Interface
	// GuardKubeconfig is the guard's identity, in system:masters;
	// GuardRESTConfig the same as a client configuration.
	GuardKubeconfig string
	GuardRESTConfig *rest.Config
	// Alice is a person with full RBAC rights (system:masters and dev)
	// whom the default policy denies.
	AliceKubeconfig string
	AliceConfig     *rest.Config
	// Dir holds the cluster, the Git repositories and test.log, the log of
	// the control plane's helpers.
	Dir string
	QPS float32
}

// EnvOptions tune an Env.
type EnvOptions struct {
	// Dir is the Env's folder (made when missing).
	Dir string
	// Simulated also starts a controller manager, a scheduler and KWOK.
	Simulated bool
	// APIServerFlags are more kube-apiserver flags (devenv.Options).
	APIServerFlags map[string]string
	// QPS of Admin, Kube and Fast (default 1000).
	QPS float32
	// Log is the log of the control plane's helpers, and controller-runtime's
	// (ctrllog.SetLogger); unset, Dir/test.log.
	Log logr.Logger
}

// StartEnv starts a control plane and a Git server in o.Dir. Stop it when
// done, also when StartEnv returns an error.
func StartEnv(o EnvOptions) (*Env, error) {
	e := &Env{Dir: o.Dir, QPS: o.QPS}
	if e.QPS == 0 {
		e.QPS = 1000
	}
	if err := os.MkdirAll(o.Dir, 0o755); err != nil {
		return e, err
	}
	crds := filepath.Join(o.Dir, "crds")
	if err := config.WriteCRDs(crds); err != nil {
		return e, fmt.Errorf("write CRDs: %w", err)
	}
	log := o.Log
	if log.GetSink() == nil {
		logFile, err := os.Create(filepath.Join(o.Dir, "test.log"))
		if err != nil {
			return e, err
		}
		log = zap.New(zap.WriteTo(logFile))
	}
	ctrllog.SetLogger(log)
	var err error
	if e.Cluster, err = devenv.Start(context.Background(), devenv.Options{Simulated: o.Simulated, CRDDirs: []string{crds},
		Dir: filepath.Join(o.Dir, "cluster"), Log: log, APIServerFlags: o.APIServerFlags}); err != nil {
		return e, fmt.Errorf("start control plane: %w", err)
	}
	if e.Git, err = gitserver.Start(filepath.Join(o.Dir, "git")); err != nil {
		return e, fmt.Errorf("start Git server: %w", err)
	}
	if e.GuardKubeconfig, e.GuardRESTConfig, err = e.Cluster.AddUser("driftguard", []string{"system:masters"}); err != nil {
		return e, err
	}
	if e.AliceKubeconfig, e.AliceConfig, err = e.Cluster.AddUser("alice", []string{"system:masters", "dev"}); err != nil {
		return e, err
	}
	if e.Admin, err = client.New(e.Fast(e.Cluster.Config), client.Options{Scheme: app.Scheme()}); err != nil {
		return e, err
	}
	e.Kube, err = kubernetes.NewForConfig(e.Fast(e.Cluster.Config))
	return e, err
}

// Fast returns a copy of c without client-go's default 5 QPS limit.
func (e *Env) Fast(c *rest.Config) *rest.Config {
	c = rest.CopyConfig(c)
	c.QPS, c.Burst = e.QPS, int(e.QPS)
	return c
}

// Stop stops the Git server and the control plane.
func (e *Env) Stop() {
	if e.Git != nil {
		_ = e.Git.Close()
	}
	if e.Cluster != nil {
		_ = e.Cluster.Stop()
	}
}

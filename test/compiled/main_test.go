// Package compiled shows the default policy compiled into the API server
// (--admission-mode=both, package compiled) on a real control plane with a
// controller manager, scheduler and simulated nodes: with the guard's
// process killed, a person's edit, scale, label and delete of a managed
// object are denied by the API server itself, naming the Git file, while
// everything else in the cluster keeps working; when the guard returns it
// brings the policies up to date. And the compiled layer answers a corpus
// of admission requests as the webhook does.
package compiled

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
	kube    kubernetes.Interface
	// guardKubeconfig is the guard's identity (system:masters).
	guardKubeconfig string
	// aliceKubeconfig: full RBAC rights, denied by the default policy.
	aliceKubeconfig string
	alice           client.Client
	// sam is in the break-glass group sre.
	sam     client.Client
	workDir string
	// apiServerAuditLog is the API server's audit log (update, patch and
	// delete of ConfigMaps and Deployments, metadata level).
	apiServerAuditLog string
)

func TestMain(m *testing.M) { os.Exit(run(m)) }

func run(m *testing.M) int {
	if missing := devenv.MissingBinaries("", true); len(missing) > 0 {
		fmt.Fprintf(os.Stderr, "compiled: %v missing in %s: run tools/build.sh\n", missing, devenv.DefaultBinDir())
		return 1
	}
	var err error
	if workDir, err = os.MkdirTemp("", "driftguard-compiled-"); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(workDir)
	if err := start(); err != nil {
		fmt.Fprintln(os.Stderr, "compiled:", err)
		stop()
		return 1
	}
	defer stop()
	return m.Run()
}

func start() error {
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
	// The API server's audit log, which has the compiled policies'
	// refusals (policy replay reads them back).
	auditPolicy := filepath.Join(workDir, "audit-policy.yaml")
	if err := os.WriteFile(auditPolicy, []byte(`apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: [RequestReceived]
rules:
- level: Metadata
  verbs: [update, patch, delete]
  resources: [{group: "", resources: [configmaps]}, {group: apps, resources: [deployments, deployments/scale]}]
- level: None
`), 0o644); err != nil {
		return err
	}
	apiServerAuditLog = filepath.Join(workDir, "apiserver-audit.log")
	if cluster, err = devenv.Start(context.Background(), devenv.Options{Simulated: true, CRDDirs: []string{crds}, Dir: filepath.Join(workDir, "cluster"), Log: log,
		APIServerFlags: map[string]string{"audit-policy-file": auditPolicy, "audit-log-path": apiServerAuditLog}}); err != nil {
		return err
	}
	if git, err = gitserver.Start(filepath.Join(workDir, "git")); err != nil {
		return err
	}
	if guardKubeconfig, _, err = cluster.AddUser("driftguard", []string{"system:masters"}); err != nil {
		return err
	}
	if admin, err = client.New(fast(cluster.Config), client.Options{Scheme: app.Scheme()}); err != nil {
		return err
	}
	if kube, err = kubernetes.NewForConfig(fast(cluster.Config)); err != nil {
		return err
	}
	var cfg *rest.Config
	if aliceKubeconfig, cfg, err = cluster.AddUser("alice", []string{"system:masters", "dev"}); err != nil {
		return err
	}
	if alice, err = client.New(fast(cfg), client.Options{Scheme: app.Scheme()}); err != nil {
		return err
	}
	if _, cfg, err = cluster.AddUser("sam", []string{"system:masters", "sre"}); err != nil {
		return err
	}
	sam, err = client.New(fast(cfg), client.Options{Scheme: app.Scheme()})
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

func fast(c *rest.Config) *rest.Config {
	c = rest.CopyConfig(c)
	c.QPS, c.Burst = 1000, 1000
	return c
}

// Package compiledlayer shows the default policy compiled into the API server
// (--admission-mode=both, package compiled) on a real control plane with a
// controller manager, scheduler and simulated nodes: with the guard's
// process killed, a person's edit, scale, label and delete of a managed
// object are denied by the API server itself, naming the Git file, while
// everything else in the cluster keeps working; when the guard returns it
// brings the policies up to date. And the compiled layer answers a corpus
// of admission requests as the webhook does.
package compiledlayer

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/driftguard/driftguard/app"
	"github.com/driftguard/driftguard/devenv"
	"github.com/driftguard/driftguard/gitserver"
	"github.com/driftguard/driftguard/test/harness"
)

var (
	env     *harness.Env
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
	var err error
	env, err = harness.StartEnv(harness.EnvOptions{Dir: workDir, Simulated: true,
		APIServerFlags: map[string]string{"audit-policy-file": auditPolicy, "audit-log-path": apiServerAuditLog}})
	if err != nil {
		return err
	}
	cluster, git, admin, kube = env.Cluster, env.Git, env.Admin, env.Kube
	// The guard's own namespace, as an install has it: the index of
	// cluster-scoped objects lives there.
	if err := admin.Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: app.DefaultOptions().Namespace}}); err != nil {
		return err
	}
	guardKubeconfig, aliceKubeconfig = env.GuardKubeconfig, env.AliceKubeconfig
	if alice, err = client.New(env.Fast(env.AliceConfig), client.Options{Scheme: app.Scheme()}); err != nil {
		return err
	}
	_, cfg, err := cluster.AddUser("sam", []string{"system:masters", "sre"})
	if err != nil {
		return err
	}
	sam, err = client.New(env.Fast(cfg), client.Options{Scheme: app.Scheme()})
	return err
}

func stop() {
	if env != nil {
		env.Stop()
	}
}

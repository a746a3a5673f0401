// Package devenv starts an embedded local Kubernetes cluster for the demo and
// the tests: etcd and kube-apiserver through controller-runtime's envtest and,
// when asked, kube-controller-manager, kube-scheduler and KWOK with one fake
// node so that workloads roll out without running any container.
//
// KWOK runs its stock fast stages (pods become Ready at once, a Job's pods
// complete) plus our own: a Running pod annotated driftguard.io/test-fail:
// "true" (FailPodAnnotation) moves to phase Failed with exit code 1, so
// tests can make a Job fail.
//
// KWOK holds the fake node's Lease in kube-node-lease and renews it as a
// kubelet does (Options.NodeMonitorGracePeriod), so the node and its pods
// stay Ready for as long as the cluster runs; KWOK's stock heartbeat stage
// alone updates the node every 10 to 20 minutes, and kube-controller-manager
// marked it NotReady one grace period (50 s) after start.
//
// Everything listens on 127.0.0.1 only. The binaries come from a folder (see
// Options.BinDir); tools/build.sh builds them.
package devenv

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

// KubeVersion is the Kubernetes version whose binaries devenv expects.
const KubeVersion = "v1.37.2"

// Binaries every cluster needs, and the extra files a simulated one needs.
var (
	baseBinaries      = []string{"etcd", "kube-apiserver", "kubectl"}
	simulatedBinaries = []string{"kube-controller-manager", "kube-scheduler", "kwok", kwokStagesFile}
)

const kwokStagesFile = "kwok-stages.yaml"

// Options configures Start.
type Options struct {
	// BinDir is the folder with the binaries. Default: DefaultBinDir().
	BinDir string
	// Simulated also starts kube-controller-manager, kube-scheduler and KWOK
	// with one fake node, so Deployments roll out, Jobs complete and
	// namespaces finish deleting. Pods annotated FailPodAnnotation fail.
	Simulated bool
	// CRDDirs are folders (or files) of CRDs to install (envtest CRDDirectoryPaths).
	CRDDirs []string
	// Dir is where kubeconfigs and logs go. Default: a temporary folder
	// that Stop removes. A given Dir is kept.
	Dir string
	// Log receives progress messages. The zero value discards them.
	Log logr.Logger
	// APIServerFlags are more kube-apiserver flags, name without dashes to
	// value, e.g. admission-control-config-file.
	APIServerFlags map[string]string
	// EtcdFlags are more etcd flags, name without dashes to value, e.g.
	// quota-backend-bytes (envtest sets none, so etcd's default backend
	// quota of 2 GiB applies).
	EtcdFlags map[string]string
	// NodeMonitorGracePeriod is how long kube-controller-manager lets the
	// simulated node go without a heartbeat before it marks the node
	// NotReady and its pods unready (--node-monitor-grace-period). KWOK
	// keeps the node's Lease in kube-node-lease renewed well inside it (a
	// Lease of 4/5 of it, renewed every quarter of that), as a kubelet does.
	// Default: 50 s, kube-controller-manager's own default. At least 2 s;
	// tests set it short to see that the node stays Ready past it.
	NodeMonitorGracePeriod time.Duration
}

// Cluster is a running local cluster. Stop it when done.
type Cluster struct {
	Env *envtest.Environment
	// Config is the admin's (group system:masters) REST config.
	Config *rest.Config
	// Dir holds kubeconfigs (*.kubeconfig) and logs (logs/*.log).
	Dir string
	// AdminKubeconfig is the path of a kubeconfig file for the admin.
	AdminKubeconfig string

	binDir    string
	removeDir bool
	log       logr.Logger

	mu       sync.Mutex
	children []*child   // started in this order, stopped in reverse
	logFiles []*os.File // envtest's etcd and kube-apiserver output
	envUp    bool
	guard    *guard // kills envtest's processes if this process crashes
	stopped  bool

	etcdPID int      // envtest's etcd
	apiPID  int      // envtest's kube-apiserver, until StopAPIServer
	apiArgv []string // its command line, to start it again
	apiLog  *os.File
	api     *child // kube-apiserver as StartAPIServer started it again
	apiDown bool   // between StopAPIServer and StartAPIServer
}

// DefaultBinDir returns $KUBEBUILDER_ASSETS when set, else the tools cache
// folder tools/build.sh builds into:
// ${DRIFTGUARD_TOOLS_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/driftguard/tools}/v1.37.2.
func DefaultBinDir() string {
	if d := os.Getenv("KUBEBUILDER_ASSETS"); d != "" {
		return d
	}
	cache := os.Getenv("DRIFTGUARD_TOOLS_CACHE")
	if cache == "" {
		base := os.Getenv("XDG_CACHE_HOME")
		if base == "" {
			home, err := os.UserHomeDir()
			if err != nil {
				home = os.TempDir()
			}
			base = filepath.Join(home, ".cache")
		}
		cache = filepath.Join(base, "driftguard", "tools")
	}
	return filepath.Join(cache, KubeVersion)
}

// MissingBinaries lists the files Start would need in binDir (DefaultBinDir()
// when empty) that are absent.
func MissingBinaries(binDir string, simulated bool) []string {
	if binDir == "" {
		binDir = DefaultBinDir()
	}
	names := append([]string(nil), baseBinaries...)
	if simulated {
		names = append(names, simulatedBinaries...)
	}
	var missing []string
	for _, n := range names {
		fi, err := os.Stat(filepath.Join(binDir, n))
		if err != nil || fi.IsDir() || fi.Size() == 0 {
			missing = append(missing, n)
		}
	}
	return missing
}

// Start starts a cluster and returns once it is usable: for a simulated one,
// once the fake node is Ready and schedulable. On error nothing is left running.
func Start(ctx context.Context, o Options) (_ *Cluster, retErr error) {
	began := time.Now()
	if o.BinDir == "" {
		o.BinDir = DefaultBinDir()
	}
	binDir, err := filepath.Abs(o.BinDir)
	if err != nil {
		return nil, fmt.Errorf("devenv: resolving BinDir %q: %w", o.BinDir, err)
	}
	if missing := MissingBinaries(binDir, o.Simulated); len(missing) > 0 {
		return nil, fmt.Errorf("devenv: %s missing in %s (build them with tools/build.sh)", strings.Join(missing, ", "), binDir)
	}

	timing, err := newNodeTiming(o.NodeMonitorGracePeriod)
	if err != nil {
		return nil, err
	}

	c := &Cluster{binDir: binDir, log: o.Log}
	if o.Dir == "" {
		d, err := os.MkdirTemp("", "driftguard-devenv-")
		if err != nil {
			return nil, fmt.Errorf("devenv: creating a temporary dir: %w", err)
		}
		c.Dir, c.removeDir = d, true
	} else {
		d, err := filepath.Abs(o.Dir)
		if err != nil {
			return nil, fmt.Errorf("devenv: resolving Dir %q: %w", o.Dir, err)
		}
		c.Dir = d
	}
	defer func() {
		if retErr != nil {
			if err := c.Stop(); err != nil {
				c.log.Error(err, "cleaning up after a failed start")
			}
		}
	}()
	if err := os.MkdirAll(c.logDir(), 0o755); err != nil {
		return nil, fmt.Errorf("devenv: creating %s: %w", c.logDir(), err)
	}

	if err := c.startControlPlane(o); err != nil {
		return nil, err
	}
	c.log.Info("control plane started", "url", c.Config.Host, "dir", c.Dir, "took", time.Since(began).Round(time.Millisecond))

	if o.Simulated {
		if err := c.startSimulation(ctx, timing); err != nil {
			return nil, err
		}
		c.log.Info("simulated cluster ready", "node", fakeNodeName, "took", time.Since(began).Round(time.Millisecond))
	}
	return c, nil
}

func (c *Cluster) logDir() string { return filepath.Join(c.Dir, "logs") }

func (c *Cluster) logPath(name string) string { return filepath.Join(c.logDir(), name+".log") }

func (c *Cluster) openLog(name string) (*os.File, error) {
	f, err := os.OpenFile(c.logPath(name), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("devenv: opening log file for %s: %w", name, err)
	}
	return f, nil
}

func (c *Cluster) startControlPlane(o Options) error {
	etcdLog, err := c.openLog("etcd")
	if err != nil {
		return err
	}
	apiLog, err := c.openLog("kube-apiserver")
	if err != nil {
		_ = etcdLog.Close()
		return err
	}
	c.logFiles = append(c.logFiles, etcdLog, apiLog)

	env := &envtest.Environment{
		BinaryAssetsDirectory:    c.binDir,
		CRDDirectoryPaths:        o.CRDDirs,
		ErrorIfCRDPathMissing:    len(o.CRDDirs) > 0,
		ControlPlaneStartTimeout: 60 * time.Second,
		ControlPlaneStopTimeout:  20 * time.Second,
	}
	// Explicit paths so that TEST_ASSET_* variables cannot point envtest elsewhere.
	env.ControlPlane.Etcd = &envtest.Etcd{
		Path: filepath.Join(c.binDir, "etcd"),
		Out:  etcdLog,
		Err:  etcdLog,
	}
	for name, value := range o.EtcdFlags {
		env.ControlPlane.Etcd.Configure().Set(name, value)
	}
	api := env.ControlPlane.GetAPIServer()
	api.Path = filepath.Join(c.binDir, "kube-apiserver")
	api.Out, api.Err = apiLog, apiLog
	// Loopback only. Webhooks at https://127.0.0.1:PORT are admitted by default.
	api.SecureServing.Address = "127.0.0.1"
	for name, value := range o.APIServerFlags {
		api.Configure().Set(name, value)
	}
	env.ControlPlane.KubectlPath = filepath.Join(c.binDir, "kubectl")

	c.Env = env
	cfg, err := env.Start()
	// envtest may have started processes even when it reports an error.
	c.envUp = true
	if err != nil {
		return fmt.Errorf("devenv: starting etcd and kube-apiserver (logs in %s): %w", c.logDir(), err)
	}
	c.Config = cfg

	// envtest's etcd and kube-apiserver have no Pdeathsig; a guard kills them
	// if this process dies without Stop.
	pids := append(
		childPIDsMatching(env.ControlPlane.Etcd.Path, "--data-dir="+env.ControlPlane.Etcd.DataDir),
		childPIDsMatching(api.Path, "--cert-dir="+api.CertDir)...)
	if len(pids) != 2 {
		c.log.Info("could not find envtest's etcd and kube-apiserver; they may outlive a crash", "found", pids)
	} else {
		c.etcdPID, c.apiPID, c.apiLog = pids[0], pids[1], apiLog
		c.apiArgv = cmdline(c.apiPID)
	}
	if c.guard, err = startGuard(pids, c.tempDirs()); err != nil {
		return err
	}

	c.AdminKubeconfig = filepath.Join(c.Dir, "admin.kubeconfig")
	if err := os.WriteFile(c.AdminKubeconfig, env.KubeConfig, 0o600); err != nil {
		return fmt.Errorf("devenv: writing the admin kubeconfig: %w", err)
	}
	return nil
}

// tempDirs are the folders Stop removes: those envtest made in the
// temporary folder (etcd's data, the API server's and the webhooks'
// certificates) and Dir when Start made it.
func (c *Cluster) tempDirs() []string {
	var dirs []string
	if c.Env != nil {
		dirs = append(dirs, c.Env.ControlPlane.Etcd.DataDir, c.Env.ControlPlane.GetAPIServer().CertDir, c.Env.WebhookInstallOptions.LocalServingCertDir)
	}
	if c.removeDir {
		dirs = append(dirs, c.Dir)
	}
	return slices.DeleteFunc(dirs, func(d string) bool { return d == "" })
}

// AddUser creates a user authenticated by a client certificate (envtest
// AddUser) and writes a kubeconfig file for it into Dir. Calling it again
// with the same name replaces that file. It returns the file's path and the
// user's REST config.
func (c *Cluster) AddUser(name string, groups []string) (kubeconfigPath string, cfg *rest.Config, err error) {
	if name == "" {
		return "", nil, errors.New("devenv: AddUser: empty user name")
	}
	u, err := c.Env.AddUser(envtest.User{Name: name, Groups: groups}, &rest.Config{QPS: c.Config.QPS, Burst: c.Config.Burst})
	if err != nil {
		return "", nil, fmt.Errorf("devenv: adding user %q: %w", name, err)
	}
	kc, err := u.KubeConfig()
	if err != nil {
		return "", nil, fmt.Errorf("devenv: rendering kubeconfig for user %q: %w", name, err)
	}
	path := filepath.Join(c.Dir, "user-"+fileSafe(name)+".kubeconfig")
	if err := os.WriteFile(path, kc, 0o600); err != nil {
		return "", nil, fmt.Errorf("devenv: writing kubeconfig for user %q: %w", name, err)
	}
	return path, u.Config(), nil
}

// fileSafe maps a user name such as system:kube-scheduler to a file name.
func fileSafe(s string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '-', r == '_', r == '.':
			return r
		}
		return '_'
	}, s)
}

// Kubectl runs BinDir/kubectl with the given kubeconfig (AdminKubeconfig when
// empty). The error, if any, includes kubectl's stderr.
func (c *Cluster) Kubectl(ctx context.Context, kubeconfig string, args ...string) (stdout, stderr string, err error) {
	if kubeconfig == "" {
		kubeconfig = c.AdminKubeconfig
	}
	cmd := exec.CommandContext(ctx, filepath.Join(c.binDir, "kubectl"), append([]string{"--kubeconfig=" + kubeconfig}, args...)...)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	cmd.Env = append(os.Environ(), "KUBECACHEDIR="+filepath.Join(c.Dir, "kubectl-cache"))
	runErr := cmd.Run()
	if runErr != nil {
		return out.String(), errOut.String(), fmt.Errorf("devenv: kubectl %s: %w: %s", strings.Join(args, " "), runErr, strings.TrimSpace(errOut.String()))
	}
	return out.String(), errOut.String(), nil
}

// Stop stops every process this cluster started and waits for them to exit.
// It removes Dir when Start created it. Calling it again does nothing.
func (c *Cluster) Stop() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.stopped {
		return nil
	}
	c.stopped = true

	var errs []error
	c.guard.stop()
	for i := len(c.children) - 1; i >= 0; i-- {
		ch := c.children[i]
		if err := ch.stop(stopGrace); err != nil {
			errs = append(errs, err)
		}
		c.log.V(1).Info("stopped", "process", ch.name, "pid", ch.pid)
	}
	if c.api != nil {
		if err := c.api.stop(stopGrace); err != nil {
			errs = append(errs, err)
		}
	}
	if c.envUp && c.Env != nil {
		if err := c.Env.Stop(); err != nil {
			errs = append(errs, fmt.Errorf("devenv: stopping etcd and kube-apiserver: %w", err))
		}
	}
	for _, f := range c.logFiles {
		_ = f.Close()
	}
	if c.removeDir {
		if err := os.RemoveAll(c.Dir); err != nil {
			errs = append(errs, fmt.Errorf("devenv: removing %s: %w", c.Dir, err))
		}
	}
	return errors.Join(errs...)
}

// EtcdURL is etcd's client address (plain HTTP on loopback), which also
// serves etcd's /metrics.
func (c *Cluster) EtcdURL() string {
	if c.Env == nil || c.Env.ControlPlane.Etcd == nil || c.Env.ControlPlane.Etcd.URL == nil {
		return ""
	}
	return c.Env.ControlPlane.Etcd.URL.String()
}

// ControlPlanePIDs returns the process ids of etcd and kube-apiserver (0
// when unknown), to measure their CPU time.
func (c *Cluster) ControlPlanePIDs() (etcd, apiserver int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.api != nil {
		return c.etcdPID, c.api.pid
	}
	if c.apiDown {
		return c.etcdPID, 0
	}
	return c.etcdPID, c.apiPID
}

// PIDs returns the process ids of the child processes devenv started itself
// (kube-controller-manager, kube-scheduler, KWOK), keyed by name. etcd and
// kube-apiserver are envtest's and not listed.
func (c *Cluster) PIDs() map[string]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	m := make(map[string]int, len(c.children))
	for _, ch := range c.children {
		m[ch.name] = ch.pid
	}
	return m
}

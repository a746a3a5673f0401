package install

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/driftguard/driftguard/api/v1alpha1"
	"github.com/driftguard/driftguard/devenv"
	"github.com/driftguard/driftguard/gitserver"
	"github.com/driftguard/driftguard/test/harness"
	"github.com/driftguard/driftguard/test/wait"
)

// guardNS is the guard's own namespace; webhookName names its webhook
// configurations.
const (
	guardNS     = "driftguard-system"
	webhookName = "driftguard"
)

// env is one control plane and Git server, with the users of a test.
type env struct {
	t       *testing.T
	dir     string
	cluster *devenv.Cluster
	git     *gitserver.Server
	admin   client.Client
	kube    kubernetes.Interface
	// guardKC is the guard's kubeconfig (a user in system:masters);
	// aliceKC a person's, whom the default policy denies.
	guardKC, aliceKC string
	alice            *rest.Config
}

func newEnv(t *testing.T) *env {
	t.Helper()
	dir := t.TempDir()
	base, err := harness.StartEnv(harness.EnvOptions{Dir: dir})
	t.Cleanup(base.Stop)
	if err != nil {
		t.Fatal(err)
	}
	e := &env{t: t, dir: dir, cluster: base.Cluster, git: base.Git, admin: base.Admin, kube: base.Kube,
		guardKC: base.GuardKubeconfig, aliceKC: base.AliceKubeconfig, alice: base.AliceConfig}
	if out, err := e.kubectl("", "create", "namespace", guardNS); err != nil {
		t.Fatalf("%v %s", err, out)
	}
	return e
}

// kubectl runs kubectl with a kubeconfig (the admin's when empty).
func (e *env) kubectl(kubeconfig string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	out, errOut, err := e.cluster.Kubectl(ctx, kubeconfig, args...)
	return strings.TrimSpace(out + errOut), err
}

// guard pushes files to a new repository and creates a Guard for it.
func (e *env) guard(name string, files map[string]string) {
	e.t.Helper()
	r, err := e.git.NewRepo(name)
	if err != nil {
		e.t.Fatal(err)
	}
	for p, c := range files {
		if err := r.WriteFile(p, c); err != nil {
			e.t.Fatal(err)
		}
	}
	if _, err := r.CommitAndPush("initial"); err != nil {
		e.t.Fatal(err)
	}
	g := &v1alpha1.Guard{ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: v1alpha1.GuardSpec{Git: &v1alpha1.GitSource{URL: e.git.URL(name), Ref: "main"}, Prune: true, Interval: metav1.Duration{Duration: 3 * time.Second}}}
	if err := e.admin.Create(context.Background(), g); err != nil {
		e.t.Fatal(err)
	}
}

// waitValue waits until a jsonpath of an object reads want.
func (e *env) waitValue(timeout time.Duration, want string, args ...string) {
	e.t.Helper()
	wait.Eventually(e.t, timeout, fmt.Sprintf("%v reads %q", args, want), func() error {
		out, err := e.kubectl("", append([]string{"get"}, args...)...)
		if err != nil || out != want {
			return fmt.Errorf("%q %v", out, err)
		}
		return nil
	})
}

// guardProc is one driftguard process.
type guardProc struct {
	name        string
	audit       *harness.Records
	logPath     string
	webhookAddr string
	cmd         *exec.Cmd
	done        chan struct{}
	mu          sync.Mutex
}

// startGuard starts `driftguard run` as a process of the test, with the
// guard's kubeconfig, a webhook on a free loopback port registered by URL,
// and more flags.
func (e *env) startGuard(name string, flags ...string) *guardProc {
	e.t.Helper()
	port := freePort(e.t)
	g := &guardProc{name: name, audit: &harness.Records{}, logPath: filepath.Join(e.dir, name+".log"),
		webhookAddr: fmt.Sprintf("127.0.0.1:%d", port), done: make(chan struct{})}
	args := append([]string{"run",
		"--kubeconfig", e.guardKC,
		"--namespace", guardNS,
		"--git-cache-dir", filepath.Join(e.dir, name+"-git"),
		"--metrics-addr", "0", "--health-addr", "0",
		"--webhook-addr", g.webhookAddr,
		"--webhook-config-name", webhookName,
		"--audit-events=false",
		"--default-interval", "3s",
	}, flags...)
	logFile, err := os.Create(g.logPath)
	if err != nil {
		e.t.Fatal(err)
	}
	g.cmd = exec.Command(bin, args...)
	g.cmd.Stdout = g.audit
	g.cmd.Stderr = &lockedWriter{mu: &g.mu, w: logFile}
	g.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	started := make(chan error, 1)
	go func() {
		// Pdeathsig fires when the thread that forked the child exits: keep
		// this goroutine on its thread until the child is gone.
		runtime.LockOSThread()
		if err := g.cmd.Start(); err != nil {
			started <- err
			close(g.done)
			return
		}
		started <- nil
		_ = g.cmd.Wait()
		logFile.Close()
		close(g.done)
	}()
	if err := <-started; err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(func() {
		g.kill()
		if g.logContains("DATA RACE") {
			e.t.Errorf("guard %s: the race detector found a data race (DRIFTGUARD_RACE=1), see %s", name, g.logPath)
		}
		if e.t.Failed() {
			e.t.Logf("log of guard %s: %s", name, g.logPath)
			if b, err := os.ReadFile(g.logPath); err == nil {
				lines := strings.Split(string(b), "\n")
				e.t.Logf("last lines:\n%s", strings.Join(lines[max(0, len(lines)-40):], "\n"))
			}
		}
	})
	return g
}

type lockedWriter struct {
	mu *sync.Mutex
	w  *os.File
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// kill stops the guard at once (SIGKILL), as a crash or a lost node would.
func (g *guardProc) kill() {
	if g.cmd.Process != nil {
		_ = syscall.Kill(-g.cmd.Process.Pid, syscall.SIGKILL)
	}
	<-g.done
}

// stop asks the guard to stop (SIGTERM) and waits.
func (g *guardProc) stop(t *testing.T) {
	t.Helper()
	_ = g.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-g.done:
	case <-time.After(30 * time.Second):
		t.Fatalf("guard %s did not stop within 30s of SIGTERM", g.name)
	}
}

// logContains reports whether the guard's log holds s.
func (g *guardProc) logContains(s string) bool {
	b, _ := os.ReadFile(g.logPath)
	return strings.Contains(string(b), s)
}

// logCount counts the lines of the guard's log holding s.
func (g *guardProc) logCount(s string) int {
	b, _ := os.ReadFile(g.logPath)
	return strings.Count(string(b), s)
}

func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

var netDialer = net.Dialer{Timeout: 5 * time.Second}

// Package demo runs `driftguard dev` as a new user would (the command behind
// make demo) and tries the commands it prints.
package demo

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/driftguard/driftguard/devenv"
	"github.com/driftguard/driftguard/test/harness"
	"github.com/driftguard/driftguard/test/wait"
)

func TestDemo(t *testing.T) {
	if missing := devenv.MissingBinaries(devenv.DefaultBinDir(), true); len(missing) > 0 {
		t.Fatalf("missing binaries %v: run tools/build.sh", missing)
	}
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	bin, err := harness.Binary()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	cmd := exec.Command(bin, "dev", "--dir", dir, "--interval", "1h", "--examples", filepath.Join(root, "examples/shop"))
	var stdout, stderr harness.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	defer func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}()
	wait.Eventually(t, 120*time.Second, "demo ready", func() error {
		select {
		case err := <-exited:
			t.Fatalf("driftguard dev exited: %v\n%s", err, stderr.String())
		default:
		}
		if !strings.Contains(stderr.String(), "Ctrl-C stops everything") {
			return fmt.Errorf("not yet")
		}
		return nil
	})
	kc := filepath.Join(dir, "cluster", "user-alice.kubeconfig")
	kubectl := func(args ...string) (string, error) {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		c := exec.CommandContext(ctx, filepath.Join(devenv.DefaultBinDir(), "kubectl"), append([]string{"--kubeconfig", kc}, args...)...)
		out, err := c.CombinedOutput()
		return strings.TrimSpace(string(out)), err
	}
	// 1. The example really rolls out on the simulated cluster.
	wait.Eventually(t, 120*time.Second, "web 3/3 available", func() error {
		out, err := kubectl("get", "deploy/web", "-n", "shop", "-o", "jsonpath={.status.availableReplicas}")
		if err != nil || out != "3" {
			return fmt.Errorf("%q %v", out, err)
		}
		return nil
	})
	if out, err := kubectl("get", "pods", "-n", "shop"); err != nil || strings.Count(out, "Running") != 3 {
		t.Fatalf("pods: %v\n%s", err, out)
	}
	// 2. A scale is denied with a message naming the file.
	out, err := kubectl("scale", "deploy/web", "--replicas=5", "-n", "shop")
	if err == nil || !strings.Contains(out, "deployment.yaml") || !strings.Contains(out, "/spec/replicas: 3 → 5") {
		t.Fatalf("scale not denied as expected: %v\n%s", err, out)
	}
	// 3. With the webhook off a patch is reverted, and the audit line names the field.
	if out, err := kubectl("delete", "validatingwebhookconfiguration,mutatingwebhookconfiguration", "driftguard"); err != nil {
		t.Fatalf("%v %s", err, out)
	}
	if out, err := kubectl("patch", "configmap", "web-config", "-n", "shop", "-p", `{"data":{"greeting":"hi"}}`); err != nil {
		t.Fatalf("%v %s", err, out)
	}
	wait.Eventually(t, 10*time.Second, "greeting reverted", func() error {
		out, err := kubectl("get", "configmap", "web-config", "-n", "shop", "-o", "jsonpath={.data.greeting}")
		if err != nil || out != "hello from Git" {
			return fmt.Errorf("%q %v", out, err)
		}
		return nil
	})
	if !strings.Contains(stdout.String(), `"path":"/data/greeting"`) {
		t.Fatalf("no audit line for the drift on stdout:\n%s", stdout.String())
	}
	// 4. A push to the demo repository is applied at once (the interval is an hour).
	m := regexp.MustCompile(`working copy: (\S+)\)`).FindStringSubmatch(stderr.String())
	if m == nil {
		t.Fatalf("no working copy in the demo's output:\n%s", stderr.String())
	}
	work := m[1]
	cfgFile := filepath.Join(work, "configmap.yaml")
	b, err := os.ReadFile(cfgFile)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(cfgFile, []byte(strings.Replace(string(b), "hello from Git", "hello from a push", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"commit", "-qam", "greeting"}, {"push", "-q"}} {
		git := exec.Command("git", append([]string{"-C", work}, args...)...)
		git.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "GIT_TERMINAL_PROMPT=0")
		if out, err := git.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	wait.Eventually(t, 30*time.Second, "pushed greeting applied", func() error {
		out, err := kubectl("get", "configmap", "web-config", "-n", "shop", "-o", "jsonpath={.data.greeting}")
		if err != nil || out != "hello from a push" {
			return fmt.Errorf("%q %v", out, err)
		}
		return nil
	})
	// Ctrl-C stops everything and leaves no process behind.
	children := childPIDs(t, cmd.Process.Pid)
	if len(children) < 5 {
		t.Fatalf("expected etcd, kube-apiserver, kube-controller-manager, kube-scheduler and kwok under driftguard dev, found %v", children)
	}
	if err := cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	select {
	case <-exited:
	case <-time.After(60 * time.Second):
		t.Fatalf("driftguard dev did not stop on Ctrl-C")
	}
	wait.Eventually(t, 10*time.Second, "no process left", func() error {
		for _, pid := range children {
			if syscall.Kill(pid, 0) == nil {
				return fmt.Errorf("process %d still running", pid)
			}
		}
		return nil
	})
}

// childPIDs lists the processes whose parent is pid, from /proc.
func childPIDs(t *testing.T, pid int) []int {
	t.Helper()
	stats, err := filepath.Glob("/proc/[0-9]*/stat")
	if err != nil {
		t.Fatal(err)
	}
	var pids []int
	for _, st := range stats {
		b, err := os.ReadFile(st)
		if err != nil {
			continue // the process ended
		}
		// pid (comm) state ppid ...; comm may hold spaces, so split after the last ')'.
		s := string(b)
		fields := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
		var child, parent int
		if len(fields) < 2 {
			continue
		}
		if _, err := fmt.Sscan(fields[1], &parent); err != nil || parent != pid {
			continue
		}
		if _, err := fmt.Sscan(filepath.Base(filepath.Dir(st)), &child); err == nil {
			pids = append(pids, child)
		}
	}
	return pids
}

package devenv

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/go-logr/logr/testr"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/driftguard/driftguard/test/wait"
)

// availableReplicas says how far Deployment ns/name is from want available
// replicas, or returns nil once it has them.
func availableReplicas(ctx context.Context, cs kubernetes.Interface, ns, name string, want int32) error {
	d, err := cs.AppsV1().Deployments(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return err
	}
	if d.Status.AvailableReplicas != want {
		return fmt.Errorf("available %d/%d", d.Status.AvailableReplicas, want)
	}
	return nil
}

// childPIDs lists the processes whose parent is this test binary, pid -> command name.
func childPIDs(t *testing.T) map[int]string {
	t.Helper()
	entries, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatalf("reading /proc: %v", err)
	}
	self := os.Getpid()
	out := map[int]string{}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...; comm may contain spaces, so split after ')'.
		s := string(b)
		i := strings.LastIndexByte(s, ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(s[i+1:])
		if len(f) < 2 {
			continue
		}
		if ppid, _ := strconv.Atoi(f[1]); ppid == self {
			out[pid] = s[strings.IndexByte(s, '(')+1 : i]
		}
	}
	return out
}

func requireGone(t *testing.T, pids map[int]string) {
	t.Helper()
	for pid, name := range pids {
		if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
			t.Errorf("process %d (%s) still exists after Stop (kill 0: %v)", pid, name, err)
		}
	}
}

func hasAll(pids map[int]string, names ...string) error {
	for _, n := range names {
		found := false
		for _, got := range pids {
			// /proc comm is cut at 15 bytes.
			if strings.HasPrefix(n, got) {
				found = true
			}
		}
		if !found {
			return fmt.Errorf("no child process %q among %v", n, pids)
		}
	}
	return nil
}

func TestStartControlPlane(t *testing.T) {
	RequireBinaries(t, false)
	ctx := t.Context()

	began := time.Now()
	c, err := Start(ctx, Options{Log: testr.New(t)})
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Logf("control plane started in %s", time.Since(began).Round(10*time.Millisecond))
	stopped := false
	t.Cleanup(func() {
		if !stopped {
			_ = c.Stop()
		}
	})

	if _, err := os.Stat(c.AdminKubeconfig); err != nil {
		t.Fatalf("admin kubeconfig: %v", err)
	}
	cs, err := kubernetes.NewForConfig(c.Config)
	if err != nil {
		t.Fatal(err)
	}
	cm := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "hello", Namespace: metav1.NamespaceDefault},
		Data:       map[string]string{"k": "v"},
	}
	if _, err := cs.CoreV1().ConfigMaps(metav1.NamespaceDefault).Create(ctx, cm, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating a ConfigMap as admin: %v", err)
	}
	out, _, err := c.Kubectl(ctx, "", "get", "configmap", "hello", "-o", "jsonpath={.data.k}")
	if err != nil || out != "v" {
		t.Fatalf("kubectl get configmap as admin: %q, %v", out, err)
	}

	alice, aliceCfg, err := c.AddUser("alice", nil)
	if err != nil {
		t.Fatalf("AddUser alice: %v", err)
	}
	_, stderr, err := c.Kubectl(ctx, alice, "get", "ns")
	if err == nil {
		t.Fatalf("kubectl get ns as alice without groups succeeded")
	}
	if !strings.Contains(stderr, "forbidden") || !strings.Contains(err.Error(), "forbidden") {
		t.Fatalf("kubectl get ns as alice: want forbidden, got %v (stderr %q)", err, stderr)
	}
	aliceCS, err := kubernetes.NewForConfig(aliceCfg)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := aliceCS.CoreV1().Namespaces().List(ctx, metav1.ListOptions{}); !apierrors.IsForbidden(err) {
		t.Fatalf("listing namespaces with alice's rest.Config: want forbidden, got %v", err)
	}

	alice, _, err = c.AddUser("alice", []string{"system:masters"})
	if err != nil {
		t.Fatalf("AddUser alice system:masters: %v", err)
	}
	out, _, err = c.Kubectl(ctx, alice, "get", "ns", "-o", "name")
	if err != nil {
		t.Fatalf("kubectl get ns as alice in system:masters: %v", err)
	}
	if !strings.Contains(out, "namespace/default") {
		t.Fatalf("kubectl get ns as alice in system:masters: %q lacks namespace/default", out)
	}

	pids := childPIDs(t)
	if err := hasAll(pids, "etcd", "kube-apiserver"); err != nil {
		t.Fatal(err)
	}
	dir := c.Dir
	began = time.Now()
	if err := c.Stop(); err != nil {
		t.Fatalf("Stop: %v", err)
	}
	stopped = true
	t.Logf("stopped in %s", time.Since(began).Round(10*time.Millisecond))
	requireGone(t, pids)
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("temporary dir %s not removed: %v", dir, err)
	}
	if err := c.Stop(); err != nil {
		t.Errorf("second Stop: %v", err)
	}
}

func TestStartSimulated(t *testing.T) {
	RequireBinaries(t, true)
	ctx := t.Context()

	began := time.Now()
	c, err := Start(ctx, Options{Simulated: true, Log: testr.New(t)})
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Logf("simulated cluster started in %s", time.Since(began).Round(10*time.Millisecond))
	stopped := false
	t.Cleanup(func() {
		if !stopped {
			_ = c.Stop()
		}
	})
	cs, err := kubernetes.NewForConfig(c.Config)
	if err != nil {
		t.Fatal(err)
	}

	if _, _, err := c.Kubectl(ctx, "", "create", "deployment", "web", "--image=nginx", "--replicas=3"); err != nil {
		t.Fatal(err)
	}
	if _, _, err := c.Kubectl(ctx, "", "create", "job", "once", "--image=busybox", "--", "true"); err != nil {
		t.Fatal(err)
	}

	wait.Eventually(t, 90*time.Second, "deployment web has 3 available replicas", func() error {
		return availableReplicas(ctx, cs, metav1.NamespaceDefault, "web", 3)
	})
	wait.Eventually(t, 90*time.Second, "job once is Complete", func() error {
		j, err := cs.BatchV1().Jobs(metav1.NamespaceDefault).Get(ctx, "once", metav1.GetOptions{})
		if err != nil {
			return err
		}
		for _, cond := range j.Status.Conditions {
			if cond.Type == batchv1.JobComplete && cond.Status == corev1.ConditionTrue {
				return nil
			}
		}
		return fmt.Errorf("conditions %v", j.Status.Conditions)
	})

	// A namespace with a running workload in it finishes deleting.
	if _, _, err := c.Kubectl(ctx, "", "create", "namespace", "doomed"); err != nil {
		t.Fatal(err)
	}
	if _, _, err := c.Kubectl(ctx, "", "-n", "doomed", "create", "deployment", "app", "--image=nginx", "--replicas=2"); err != nil {
		t.Fatal(err)
	}
	wait.Eventually(t, 90*time.Second, "deployment doomed/app has 2 available replicas", func() error {
		return availableReplicas(ctx, cs, "doomed", "app", 2)
	})
	if _, _, err := c.Kubectl(ctx, "", "delete", "namespace", "doomed", "--wait=false"); err != nil {
		t.Fatal(err)
	}
	wait.Eventually(t, 90*time.Second, "namespace doomed is gone", func() error {
		ns, err := cs.CoreV1().Namespaces().Get(ctx, "doomed", metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return nil
		}
		if err != nil {
			return err
		}
		return fmt.Errorf("phase %s, conditions %v", ns.Status.Phase, ns.Status.Conditions)
	})

	pids := childPIDs(t)
	if err := hasAll(pids, "etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "kwok"); err != nil {
		t.Fatal(err)
	}
	for name, pid := range c.PIDs() {
		if _, ok := pids[pid]; !ok {
			t.Errorf("%s pid %d is not a child of the test", name, pid)
		}
	}
	began = time.Now()
	if err := c.Stop(); err != nil {
		t.Fatalf("Stop: %v", err)
	}
	stopped = true
	t.Logf("stopped in %s", time.Since(began).Round(10*time.Millisecond))
	requireGone(t, pids)
	if left := childPIDs(t); len(left) > 0 {
		t.Errorf("child processes left after Stop: %v", left)
	}
}

// procState returns the state letter of pid from /proc ("" when gone).
func procState(pid int) string {
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return ""
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if f := strings.Fields(s[i+1:]); i >= 0 && len(f) > 0 {
		return f[0]
	}
	return ""
}

type crashReport struct {
	Dir      string         `json:"dir"`
	Children map[int]string `json:"children"` // all child processes of the helper
	Own      map[string]int `json:"own"`      // Cluster.PIDs()
	Temp     []string       `json:"temp"`     // the folders Stop removes
}

// TestChildrenDieWithParent starts a simulated cluster in a helper process,
// kills the helper with SIGKILL and checks that the processes devenv started
// die with it: its own children through Pdeathsig, envtest's etcd and
// kube-apiserver through the guard, which also removes the temporary
// folders Stop would have (each run left a quarter of a gigabyte before).
func TestChildrenDieWithParent(t *testing.T) {
	if os.Getenv("DEVENV_CRASH_HELPER") == "1" {
		c, err := Start(context.Background(), Options{Simulated: true})
		if err != nil {
			fmt.Println("ERROR", err)
			os.Exit(1)
		}
		b, _ := json.Marshal(crashReport{Dir: c.Dir, Children: childPIDs(t), Own: c.PIDs(), Temp: c.tempDirs()})
		fmt.Println("REPORT", string(b))
		select {} // wait to be killed
	}
	RequireBinaries(t, true)

	cmd := exec.Command(os.Args[0], "-test.run=^TestChildrenDieWithParent$")
	cmd.Env = append(os.Environ(), "DEVENV_CRASH_HELPER=1")
	cmd.Stderr = os.Stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var rep crashReport
	sc := bufio.NewScanner(stdout)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "ERROR ") {
			_ = cmd.Wait()
			t.Fatalf("helper: %s", line)
		}
		if rest, ok := strings.CutPrefix(line, "REPORT "); ok {
			if err := json.Unmarshal([]byte(rest), &rep); err != nil {
				t.Fatal(err)
			}
			break
		}
	}
	if rep.Own == nil {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		t.Fatal("helper exited without a report")
	}
	if len(rep.Temp) < 4 {
		t.Fatalf("temporary folders %q: want etcd's data, two of certificates and Dir", rep.Temp)
	}
	t.Cleanup(func() {
		for _, d := range append(rep.Temp, rep.Dir) {
			_ = os.RemoveAll(d)
		}
	})
	own := map[int]bool{}
	for _, pid := range rep.Own {
		own[pid] = true
	}
	// Should the guard fail, do not leave envtest's processes running.
	t.Cleanup(func() {
		for pid, name := range rep.Children {
			if !own[pid] && procState(pid) != "" && procState(pid) != "Z" {
				t.Errorf("%s (pid %d) outlived the crash; killing it", name, pid)
				_ = syscall.Kill(pid, syscall.SIGKILL)
			}
		}
	})

	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	wait.Eventually(t, 10*time.Second, "all child processes died with their parent", func() error {
		for pid, name := range rep.Children {
			if st := procState(pid); st != "" && st != "Z" {
				return fmt.Errorf("%s (pid %d) in state %s", name, pid, st)
			}
		}
		return nil
	})
	wait.Eventually(t, 10*time.Second, "the temporary folders removed", func() error {
		for _, d := range rep.Temp {
			if _, err := os.Stat(d); !errors.Is(err, fs.ErrNotExist) {
				return fmt.Errorf("%s: %v", d, err)
			}
		}
		return nil
	})
}

func TestDefaultBinDir(t *testing.T) {
	t.Setenv("KUBEBUILDER_ASSETS", "")
	t.Setenv("DRIFTGUARD_TOOLS_CACHE", "")
	t.Setenv("XDG_CACHE_HOME", "/x")
	if got, want := DefaultBinDir(), "/x/driftguard/tools/"+KubeVersion; got != want {
		t.Errorf("XDG_CACHE_HOME: got %s, want %s", got, want)
	}
	t.Setenv("DRIFTGUARD_TOOLS_CACHE", "/c")
	if got, want := DefaultBinDir(), "/c/"+KubeVersion; got != want {
		t.Errorf("DRIFTGUARD_TOOLS_CACHE: got %s, want %s", got, want)
	}
	t.Setenv("KUBEBUILDER_ASSETS", "/k")
	if got := DefaultBinDir(); got != "/k" {
		t.Errorf("KUBEBUILDER_ASSETS: got %s, want /k", got)
	}
}

func TestStartMissingBinaries(t *testing.T) {
	dir := t.TempDir()
	_, err := Start(t.Context(), Options{BinDir: dir, Simulated: true})
	if err == nil || !strings.Contains(err.Error(), "kube-apiserver") || !strings.Contains(err.Error(), "kwok-stages.yaml") {
		t.Fatalf("want an error naming the missing files, got %v", err)
	}
}

func TestNewNodeTiming(t *testing.T) {
	for _, tc := range []struct {
		grace              time.Duration
		wantGrace, wantMon time.Duration
		wantLease          int
		wantErr            bool
	}{
		{grace: 0, wantGrace: 50 * time.Second, wantMon: 5 * time.Second, wantLease: 40},
		{grace: 50 * time.Second, wantGrace: 50 * time.Second, wantMon: 5 * time.Second, wantLease: 40},
		{grace: 2 * time.Minute, wantGrace: 2 * time.Minute, wantMon: 5 * time.Second, wantLease: 96},
		{grace: 6 * time.Second, wantGrace: 6 * time.Second, wantMon: 1200 * time.Millisecond, wantLease: 4},
		{grace: 2 * time.Second, wantGrace: 2 * time.Second, wantMon: 400 * time.Millisecond, wantLease: 1},
		{grace: time.Second, wantErr: true},
		{grace: 2500 * time.Millisecond, wantErr: true},
		{grace: -time.Minute, wantErr: true},
	} {
		got, err := newNodeTiming(tc.grace)
		if (err != nil) != tc.wantErr {
			t.Errorf("newNodeTiming(%s): error %v, want error %v", tc.grace, err, tc.wantErr)
			continue
		}
		if tc.wantErr {
			if !strings.Contains(err.Error(), "NodeMonitorGracePeriod") {
				t.Errorf("newNodeTiming(%s): error %q does not name NodeMonitorGracePeriod", tc.grace, err)
			}
			continue
		}
		if got.gracePeriod != tc.wantGrace || got.monitorPeriod != tc.wantMon || got.leaseSeconds != tc.wantLease {
			t.Errorf("newNodeTiming(%s) = %+v, want grace %s, monitor %s, lease %ds", tc.grace, got, tc.wantGrace, tc.wantMon, tc.wantLease)
		}
		// KWOK renews every lease/4; the renewals must fit in the grace period several times.
		if renew := time.Duration(got.leaseSeconds) * time.Second / 4; renew*4 > got.gracePeriod {
			t.Errorf("newNodeTiming(%s): renewal every %s leaves too little of the grace period", tc.grace, renew)
		}
	}
}

// TestSimulatedNodeStaysReady: with kube-controller-manager's grace period
// set to 10 s, the fake node and the pods on it stay Ready for two grace
// periods (without a node Lease the node turned NotReady one grace period
// after start, and every pod unready with it), and KWOK keeps renewing the
// node's Lease.
func TestSimulatedNodeStaysReady(t *testing.T) {
	RequireBinaries(t, true)
	ctx := t.Context()
	const grace = 10 * time.Second
	c, err := Start(ctx, Options{Simulated: true, NodeMonitorGracePeriod: grace, Log: testr.New(t)})
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(func() { _ = c.Stop() })
	cs, err := kubernetes.NewForConfig(c.Config)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := c.Kubectl(ctx, "", "create", "deployment", "web", "--image=nginx", "--replicas=2"); err != nil {
		t.Fatal(err)
	}
	wait.Eventually(t, 90*time.Second, "deployment web has 2 available replicas", func() error {
		return availableReplicas(ctx, cs, metav1.NamespaceDefault, "web", 2)
	})

	var renewals []time.Time
	until := time.Now().Add(2 * grace)
	for time.Now().Before(until) {
		node, err := cs.CoreV1().Nodes().Get(ctx, fakeNodeName, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for _, cond := range node.Status.Conditions {
			if cond.Type == corev1.NodeReady && cond.Status != corev1.ConditionTrue {
				t.Fatalf("node %s Ready=%s (%s: %s) within %s of a %s grace period; kube-controller-manager log %s, kwok log %s",
					fakeNodeName, cond.Status, cond.Reason, cond.Message, time.Until(until).Round(time.Second), grace,
					c.logPath("kube-controller-manager"), c.logPath("kwok"))
			}
		}
		for _, taint := range node.Spec.Taints {
			if taint.Key == corev1.TaintNodeNotReady || taint.Key == corev1.TaintNodeUnreachable {
				t.Fatalf("node %s tainted %s", fakeNodeName, taint.Key)
			}
		}
		pods, err := cs.CoreV1().Pods(metav1.NamespaceDefault).List(ctx, metav1.ListOptions{LabelSelector: "app=web"})
		if err != nil {
			t.Fatal(err)
		}
		if len(pods.Items) != 2 {
			t.Fatalf("%d pods of deployment web, want 2", len(pods.Items))
		}
		for _, p := range pods.Items {
			for _, cond := range p.Status.Conditions {
				if cond.Type == corev1.PodReady && cond.Status != corev1.ConditionTrue {
					t.Fatalf("pod %s Ready=%s (%s) while its node should be Ready", p.Name, cond.Status, cond.Reason)
				}
			}
		}
		lease, err := cs.CoordinationV1().Leases(corev1.NamespaceNodeLease).Get(ctx, fakeNodeName, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err): // counted below: no renewals
		case err != nil:
			t.Fatalf("Lease of node %s: %v", fakeNodeName, err)
		default:
			if rt := lease.Spec.RenewTime; rt != nil && (len(renewals) == 0 || !rt.Time.Equal(renewals[len(renewals)-1])) {
				renewals = append(renewals, rt.Time)
			}
		}
		time.Sleep(250 * time.Millisecond)
	}
	// Renewed every 2 s (an 8 s Lease): many times in 20 s; fewer than one
	// per grace period would not keep the node Ready on a loaded machine.
	if len(renewals) < 3 {
		t.Errorf("Lease of node %s renewed %d times in %s, want at least 3", fakeNodeName, len(renewals), 2*grace)
	}
	t.Logf("node Ready and pods ready for %s (grace period %s); Lease renewed %d times", 2*grace, grace, len(renewals))
}

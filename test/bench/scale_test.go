package bench

import (
	"bufio"
	"bytes"
	"context"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/driftguard/driftguard/api/v1alpha1"
	"github.com/driftguard/driftguard/app"
	"github.com/driftguard/driftguard/config"
	"github.com/driftguard/driftguard/devenv"
	"github.com/driftguard/driftguard/gitserver"
)

// The scale fixture: 10 namespaces of 399 ConfigMaps, 200 Secrets, 200
// Services and 200 Deployments each, plus the 10 Namespace objects: 10,000
// managed objects, 25 documents per file (401 files).
const (
	scaleNamespaces  = 10
	scaleConfigMaps  = 399 // per namespace; 399·10 + 10 Namespaces = 4,000
	scaleOthers      = 200 // Secrets, Services and Deployments per namespace
	scaleDocsPerFile = 25
	scaleObjects     = scaleNamespaces * (1 + scaleConfigMaps + 3*scaleOthers)
	scaleGuard       = "scale"
	scaleReadyWithin = 10 * time.Minute
	clockTicks       = 100 // sysconf(_SC_CLK_TCK) on Linux
)

// scaleMemoryLimit is the guard's --memory-limit in BenchmarkScale10k, as the
// chart derives it from a container's memory limit (empty: none).
var scaleMemoryLimit = flag.String("scale-memory-limit", "", "--memory-limit of the guard in BenchmarkScale10k (e.g. 128Mi)")

// BenchmarkScale10k runs the guard as a process of its own (the built
// binary) against a real control plane, with one Guard of 10,000 objects, and
// reports the time to apply them, the guard's resident memory and the CPU
// time of an idle interval that holds one no-op full reconcile.
//
// It starts its own control plane and runs only when -bench names it
// (e.g. -bench Scale10k), so `-bench .` (make bench-e2e) does not run it.
func BenchmarkScale10k(b *testing.B) {
	if f := flag.Lookup("test.bench"); f == nil || !strings.Contains(f.Value.String(), "Scale") {
		b.Skip("runs only when -bench names it (-bench Scale10k)")
	}
	if missing := devenv.MissingBinaries("", false); len(missing) > 0 {
		b.Skipf("control-plane binaries missing in %s: %v (run tools/build.sh, set KUBEBUILDER_ASSETS)", devenv.DefaultBinDir(), missing)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	dir, err := os.MkdirTemp("", "driftguard-bench-scale-")
	if err != nil {
		b.Fatal(err)
	}
	defer func() {
		if os.Getenv("DRIFTGUARD_KEEP_BENCH") == "" {
			_ = os.RemoveAll(dir)
		} else {
			b.Logf("kept %s", dir)
		}
	}()

	// Control plane (etcd + kube-apiserver) and Git server.
	crds := filepath.Join(dir, "crds")
	sub, err := fs.Sub(config.CRDs, "crd")
	if err != nil {
		b.Fatal(err)
	}
	if err := os.CopyFS(crds, sub); err != nil {
		b.Fatal(err)
	}
	logFile, err := os.Create(filepath.Join(dir, "bench.log"))
	if err != nil {
		b.Fatal(err)
	}
	defer logFile.Close()
	log := zap.New(zap.WriteTo(logFile))
	envMu.Lock()
	if current == nil {
		ctrllog.SetLogger(log) // else the in-process guard's logger stays
	}
	envMu.Unlock()
	began := time.Now()
	cluster, err := devenv.Start(ctx, devenv.Options{CRDDirs: []string{crds}, Dir: filepath.Join(dir, "cluster"), Log: log})
	if err != nil {
		b.Fatal(err)
	}
	defer func() { _ = cluster.Stop() }()
	git, err := gitserver.Start(filepath.Join(dir, "git"))
	if err != nil {
		b.Fatal(err)
	}
	defer func() { _ = git.Close() }()
	// A counting front for the Git server: the guard fetches through it, so
	// the benchmark sees when a full reconcile starts.
	var gitRequests atomic.Int64
	front, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	defer front.Close()
	gitHandler := git.Handler()
	go func() {
		_ = http.Serve(front, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			gitRequests.Add(1)
			gitHandler.ServeHTTP(w, r)
		}))
	}()
	adminCfg := fastConfig(cluster.Config)
	admin, err := client.New(adminCfg, client.Options{Scheme: app.Scheme()})
	if err != nil {
		b.Fatal(err)
	}
	kube, err := kubernetes.NewForConfig(adminCfg)
	if err != nil {
		b.Fatal(err)
	}
	b.Logf("control plane and Git server up in %s", time.Since(began).Round(time.Millisecond))

	// envtest serves Services from 10.0.0.0/24 (254 addresses); add a range
	// for 2,000 ClusterIPs.
	if err := addServiceCIDR(ctx, kube, "bench-scale", "10.1.0.0/20"); err != nil {
		b.Fatal(err)
	}

	rev, files, err := commitScaleRepo(git)
	if err != nil {
		b.Fatal(err)
	}
	b.Logf("committed %d objects in %d files (%s)", scaleObjects, files, rev[:7])

	// Build and start the guard as its own process.
	bin := filepath.Join(dir, "driftguard")
	// As the Makefile and the image build it: static, no cgo.
	build := exec.Command("go", "build", "-trimpath", "-o", bin, "./cmd/driftguard")
	build.Dir = "../.."
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		b.Fatalf("build: %v\n%s", err, out)
	}
	guardKC, _, err := cluster.AddUser("driftguard", []string{"system:masters"})
	if err != nil {
		b.Fatal(err)
	}
	guardLog, err := os.Create(filepath.Join(dir, "guard.log"))
	if err != nil {
		b.Fatal(err)
	}
	defer guardLog.Close()
	pprofAddr, err := loopbackAddr()
	if err != nil {
		b.Fatal(err)
	}
	args := []string{"run", "--kubeconfig", guardKC,
		"--webhook-addr", "127.0.0.1:0", "--metrics-addr", "0", "--health-addr", "0", "--pprof-addr", pprofAddr,
		"--audit-events=false", "--audit-stdout=false",
		"--git-cache-dir", filepath.Join(dir, "gitcache"), "--default-interval", "30s"}
	if *scaleMemoryLimit != "" {
		args = append(args, "--memory-limit", *scaleMemoryLimit)
	}
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = guardLog, guardLog
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	defer func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		select {
		case <-exited:
		case <-time.After(10 * time.Second):
		}
	}()
	pid := cmd.Process.Pid
	alive := func() {
		select {
		case err := <-exited:
			b.Fatalf("guard exited: %v (log in %s; set DRIFTGUARD_KEEP_BENCH=1 to keep it)", err, guardLog.Name())
		default:
		}
	}
	// Up when its webhook configuration is registered; RSS before any Guard.
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		alive()
		if _, err := kube.AdmissionregistrationV1().ValidatingWebhookConfigurations().Get(ctx, "driftguard", metav1.GetOptions{}); err == nil {
			break
		}
		if time.Now().After(deadline) {
			b.Fatalf("guard did not register its webhook within 60s (log in %s)", guardLog.Name())
		}
	}
	startRSS, _ := procMem(pid)

	// The Guard; wait until all 10,000 objects are applied and it is Ready.
	g := &v1alpha1.Guard{
		ObjectMeta: metav1.ObjectMeta{Name: scaleGuard},
		Spec: v1alpha1.GuardSpec{
			URL:      "http://" + front.Addr().String() + "/" + scaleGuard + ".git",
			Ref:      "main",
			Prune:    true,
			Interval: metav1.Duration{Duration: 30 * time.Second},
		},
	}
	b.ResetTimer()
	created := time.Now()
	if err := admin.Create(ctx, g); err != nil {
		b.Fatal(err)
	}
	var got v1alpha1.Guard
	for deadline := created.Add(scaleReadyWithin); ; time.Sleep(500 * time.Millisecond) {
		alive()
		err := admin.Get(ctx, client.ObjectKey{Name: scaleGuard}, &got)
		if err == nil && meta.IsStatusConditionTrue(got.Status.Conditions, v1alpha1.ConditionReady) &&
			got.Status.LastAppliedRevision == rev && got.Status.ManagedObjects == scaleObjects {
			break
		}
		if time.Now().After(deadline) {
			b.Fatalf("guard not Ready with %d objects within %s: %v %+v", scaleObjects, scaleReadyWithin, err, got.Status)
		}
	}
	applyAll := time.Since(created)
	b.StopTimer()
	rssApplied, hwmApplied := procMem(pid)
	b.Logf("10,000 objects applied and Ready in %s; RSS %.1f MiB", applyAll.Round(time.Millisecond), rssApplied)

	// The idle interval: from a few seconds after Ready until the next full
	// reconcile (seen as a fetch at the Git front) has finished, i.e. until
	// the guard's CPU time stands still for 3 s.
	time.Sleep(3 * time.Second)
	alive()
	t0, cpu0, git0 := time.Now(), procCPU(pid), gitRequests.Load()
	api0, err := apiRequests(ctx, kube)
	if err != nil {
		b.Fatal(err)
	}
	var tFetch time.Time
	var cpuFetch int64
	for deadline := t0.Add(90 * time.Second); tFetch.IsZero(); time.Sleep(50 * time.Millisecond) {
		alive()
		if gitRequests.Load() > git0 {
			tFetch, cpuFetch = time.Now(), procCPU(pid)
		} else if time.Now().After(deadline) {
			b.Fatalf("no full reconcile (Git fetch) within 90 s of Ready (30 s interval)")
		}
	}
	still, last := 0, procCPU(pid)
	for deadline := tFetch.Add(3 * time.Minute); still < 3; {
		alive()
		if time.Now().After(deadline) {
			b.Fatalf("the guard's CPU time did not stand still within 3 min of the fetch")
		}
		time.Sleep(time.Second)
		c := procCPU(pid)
		if c-last <= 1 { // at most 10 ms in that second
			still++
		} else {
			still = 0
		}
		last = c
	}
	t1, cpu1 := time.Now(), procCPU(pid)
	api1, err := apiRequests(ctx, kube)
	if err != nil {
		b.Fatal(err)
	}
	rssIdle, hwm := procMem(pid)
	if status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid)); err == nil {
		for _, line := range strings.Split(string(status), "\n") {
			if strings.HasPrefix(line, "RssAnon:") || strings.HasPrefix(line, "RssFile:") {
				b.Logf("idle %s", strings.Join(strings.Fields(line), " "))
			}
		}
	}
	if os.Getenv("DRIFTGUARD_KEEP_BENCH") != "" {
		if err := saveHeapProfile(pprofAddr, filepath.Join(dir, "heap.pprof")); err != nil {
			b.Logf("heap profile: %v", err)
		}
		if err := saveURL("http://"+pprofAddr+"/debug/pprof/heap?debug=1", filepath.Join(dir, "memstats.txt")); err != nil {
			b.Logf("memstats: %v", err)
		}
	}
	if err := admin.Get(ctx, client.ObjectKey{Name: scaleGuard}, &got); err != nil {
		b.Fatal(err)
	}

	cpuWindow := float64(cpu1-cpu0) / clockTicks
	idleRate := float64(cpuFetch-cpu0) / clockTicks / tFetch.Sub(t0).Seconds()
	cpuReconcile := float64(cpu1-cpuFetch) / clockTicks
	managedCalls, otherCalls := apiDelta(api0, api1)
	for k, v := range api1 {
		if d := v - api0[k]; d > 0 {
			b.Logf("API requests during the idle interval: %s %.0f", k, d)
		}
	}
	printTable(fmt.Sprintf("BenchmarkScale10k: guard as its own process, one Guard of %d objects (%d Namespaces, %d ConfigMaps, %d Secrets, %d Services, %d Deployments in %d files), interval 30s, audit sinks off",
		scaleObjects, scaleNamespaces, scaleNamespaces*scaleConfigMaps, scaleNamespaces*scaleOthers, scaleNamespaces*scaleOthers, scaleNamespaces*scaleOthers, files),
		[]string{"figure", "value", "target"}, [][]string{
			{"Guard created → Ready with 10,000 objects (s)", fmt.Sprintf("%.1f", applyAll.Seconds()), ""},
			{"RSS at start-up, before the Guard (MiB)", fmt.Sprintf("%.1f", startRSS), ""},
			{"RSS after apply (MiB)", fmt.Sprintf("%.1f", rssApplied), "≤ 150"},
			{"RSS after the idle reconcile (MiB)", fmt.Sprintf("%.1f", rssIdle), "≤ 150"},
			{"peak RSS, VmHWM (MiB)", fmt.Sprintf("%.1f (%.1f at Ready)", hwm, hwmApplied), ""},
			{"idle interval (s): Ready+3s → next fetch → CPU still for 3s", fmt.Sprintf("%.1f (fetch after %.1f)", t1.Sub(t0).Seconds(), tFetch.Sub(t0).Seconds()), ""},
			{"CPU during the idle interval (s)", fmt.Sprintf("%.2f", cpuWindow), ""},
			{"  of which from the fetch on: no-op full reconcile (s)", fmt.Sprintf("%.2f", cpuReconcile), "< 1"},
			{"  idle before the fetch (CPU s per s)", fmt.Sprintf("%.4f", idleRate), ""},
			{"Git requests in the interval", fmt.Sprint(gitRequests.Load() - git0), ""},
			{"API requests on managed kinds, non-watch (all clients)", fmt.Sprint(managedCalls), "0"},
			{"other API requests, non-watch (all clients, incl. the API server's own)", fmt.Sprint(otherCalls), ""},
			{"Guard status after", fmt.Sprintf("managed %d, drifted %d", got.Status.ManagedObjects, got.Status.DriftedObjects), ""},
		})
	b.ReportMetric(applyAll.Seconds(), "apply-all-s")
	b.ReportMetric(rssApplied, "rss-applied-MiB")
	b.ReportMetric(rssIdle, "rss-idle-MiB")
	b.ReportMetric(hwm, "rss-peak-MiB")
	b.ReportMetric(cpuWindow, "idle-interval-cpu-s")
	b.ReportMetric(cpuReconcile, "noop-reconcile-cpu-s")
	b.ReportMetric(float64(managedCalls), "idle-managed-api-calls")
	b.ReportMetric(0, "ns/op")
}

// loopbackAddr returns a free 127.0.0.1 address.
func loopbackAddr() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer l.Close()
	return l.Addr().String(), nil
}

// saveHeapProfile writes the guard's heap profile (after a GC) to path, for
// `go tool pprof`.
func saveHeapProfile(addr, path string) error {
	return saveURL("http://"+addr+"/debug/pprof/heap?gc=1", path)
}

// saveURL writes what a GET of url returns to path (the runtime's memory
// statistics are at the end of /debug/pprof/heap?debug=1).
func saveURL(url, path string) error {
	resp, err := http.Get(url)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	defer f.Close()
	_, err = io.Copy(f, resp.Body)
	return err
}

// addServiceCIDR adds a ServiceCIDR and waits (at most 30 s) until it is
// Ready. Without kube-controller-manager nobody marks it Ready, so the
// benchmark sets the condition itself, as the servicecidrs controller would.
func addServiceCIDR(ctx context.Context, kube kubernetes.Interface, name, cidr string) error {
	sc := &networkingv1.ServiceCIDR{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: networkingv1.ServiceCIDRSpec{CIDRs: []string{cidr}}}
	sc, err := kube.NetworkingV1().ServiceCIDRs().Create(ctx, sc, metav1.CreateOptions{})
	if err != nil {
		return fmt.Errorf("create ServiceCIDR %s: %w", cidr, err)
	}
	meta.SetStatusCondition(&sc.Status.Conditions, metav1.Condition{Type: networkingv1.ServiceCIDRConditionReady, Status: metav1.ConditionTrue, Reason: "Bench", Message: "set by BenchmarkScale10k"})
	if _, err := kube.NetworkingV1().ServiceCIDRs().UpdateStatus(ctx, sc, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("mark ServiceCIDR %s Ready: %w", cidr, err)
	}
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		got, err := kube.NetworkingV1().ServiceCIDRs().Get(ctx, name, metav1.GetOptions{})
		if err == nil && meta.IsStatusConditionTrue(got.Status.Conditions, networkingv1.ServiceCIDRConditionReady) {
			return nil
		}
	}
	return fmt.Errorf("ServiceCIDR %s not Ready within 30s", cidr)
}

// commitScaleRepo writes the 10,000 objects into repository scaleGuard and
// pushes them; it returns the commit and the number of files.
func commitScaleRepo(git *gitserver.Server) (rev string, files int, err error) {
	repo, err := git.NewRepo(scaleGuard)
	if err != nil {
		return "", 0, err
	}
	write := func(path string, docs []string) error {
		files++
		return repo.WriteFile(path, strings.Join(docs, "---\n"))
	}
	var nss []string
	for n := range scaleNamespaces {
		nss = append(nss, fmt.Sprintf("apiVersion: v1\nkind: Namespace\nmetadata:\n  name: %s\n", scaleNS(n)))
	}
	if err := write("namespaces.yaml", nss); err != nil {
		return "", 0, err
	}
	kinds := []struct {
		dir   string
		count int
		doc   func(ns string, i int) string
	}{
		{"configmaps", scaleConfigMaps, func(ns string, i int) string {
			return fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm-%04d\n  namespace: %s\ndata:\n  mode: production\n  index: \"%d\"\n  greeting: hello from Git\n", i, ns, i)
		}},
		{"secrets", scaleOthers, func(ns string, i int) string {
			return fmt.Sprintf("apiVersion: v1\nkind: Secret\nmetadata:\n  name: secret-%04d\n  namespace: %s\ntype: Opaque\nstringData:\n  username: app-%d\n  password: s3cr3t-%d\n", i, ns, i, i)
		}},
		{"services", scaleOthers, func(ns string, i int) string {
			return fmt.Sprintf("apiVersion: v1\nkind: Service\nmetadata:\n  name: svc-%04d\n  namespace: %s\nspec:\n  type: ClusterIP\n  selector:\n    app: app-%04d\n  ports:\n  - name: http\n    port: 80\n    targetPort: 8080\n    protocol: TCP\n", i, ns, i)
		}},
		{"deployments", scaleOthers, func(ns string, i int) string {
			return fmt.Sprintf("apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: app-%04d\n  namespace: %s\nspec:\n  replicas: 1\n  selector:\n    matchLabels:\n      app: app-%04d\n  template:\n    metadata:\n      labels:\n        app: app-%04d\n    spec:\n      containers:\n      - name: app\n        image: registry.example/app:1.0\n        ports:\n        - containerPort: 8080\n", i, ns, i, i)
		}},
	}
	for n := range scaleNamespaces {
		ns := scaleNS(n)
		for _, k := range kinds {
			for start := 0; start < k.count; start += scaleDocsPerFile {
				var docs []string
				for i := start; i < min(start+scaleDocsPerFile, k.count); i++ {
					docs = append(docs, k.doc(ns, i))
				}
				if err := write(filepath.Join(ns, fmt.Sprintf("%s-%02d.yaml", k.dir, start/scaleDocsPerFile)), docs); err != nil {
					return "", 0, err
				}
			}
		}
	}
	rev, err = repo.CommitAndPush(fmt.Sprintf("%d objects", scaleObjects))
	return rev, files, err
}

func scaleNS(n int) string { return fmt.Sprintf("scale-%02d", n) }

// procMem returns VmRSS and VmHWM of pid in MiB (0 when unreadable).
func procMem(pid int) (rss, hwm float64) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, 0
	}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 2 {
			continue
		}
		kb, _ := strconv.ParseFloat(f[1], 64)
		switch f[0] {
		case "VmRSS:":
			rss = kb / 1024
		case "VmHWM:":
			hwm = kb / 1024
		}
	}
	return rss, hwm
}

// procCPU returns utime+stime of pid in clock ticks (0 when unreadable).
func procCPU(pid int) int64 {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	// pid (comm) state ppid …: comm may hold spaces, so split after the last ')'.
	s := string(data)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	if len(f) < 13 {
		return 0
	}
	ut, _ := strconv.ParseInt(f[11], 10, 64) // field 14
	st, _ := strconv.ParseInt(f[12], 10, 64) // field 15
	return ut + st
}

// apiRequests reads apiserver_request_total from the API server's /metrics,
// summed per "verb resource", WATCH excluded.
func apiRequests(ctx context.Context, kube kubernetes.Interface) (map[string]float64, error) {
	raw, err := kube.CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
	if err != nil {
		return nil, fmt.Errorf("API server metrics: %w", err)
	}
	out := map[string]float64{}
	sc := bufio.NewScanner(bytes.NewReader(raw))
	sc.Buffer(make([]byte, 0, 1<<16), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		labels, ok := strings.CutPrefix(line, "apiserver_request_total{")
		if !ok {
			continue
		}
		labels, value, ok := strings.Cut(labels, "} ")
		if !ok {
			continue
		}
		verb, resource := metricLabel(labels, "verb"), metricLabel(labels, "resource")
		if verb == "WATCH" || resource == "" {
			continue
		}
		v, err := strconv.ParseFloat(strings.TrimSpace(value), 64)
		if err != nil {
			continue
		}
		out[verb+" "+resource] += v
	}
	return out, sc.Err()
}

func metricLabel(labels, name string) string {
	_, rest, ok := strings.Cut(","+labels, ","+name+`="`)
	if !ok {
		return ""
	}
	v, _, _ := strings.Cut(rest, `"`)
	return v
}

// apiDelta splits the requests made between two readings into those on the
// managed kinds and the rest.
func apiDelta(before, after map[string]float64) (managed, other int) {
	kinds := map[string]bool{"namespaces": true, "configmaps": true, "secrets": true, "services": true, "deployments": true}
	for k, v := range after {
		d := int(v - before[k])
		if d <= 0 {
			continue
		}
		_, resource, _ := strings.Cut(k, " ")
		if kinds[resource] {
			managed += d
		} else {
			other += d
		}
	}
	return managed, other
}

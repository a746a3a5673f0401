package bench

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
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
	"github.com/driftguard/driftguard/apply"
	"github.com/driftguard/driftguard/config"
	"github.com/driftguard/driftguard/devenv"
	"github.com/driftguard/driftguard/gitserver"
	"github.com/driftguard/driftguard/test/bench/report"
	"github.com/driftguard/driftguard/test/harness"
	"github.com/driftguard/driftguard/test/wait"
)

// scaleSize is one Guard of the scale benchmark: namespaces, each with
// configMaps ConfigMaps and others Secrets, Services and Deployments, plus
// the Namespace objects, 25 documents a file.
type scaleSize struct {
	prefix     string
	namespaces int
	configMaps int
	others     int
}

func (s scaleSize) objects() int { return s.namespaces * (1 + s.configMaps + 3*s.others) }

func (s scaleSize) ns(n int) string { return fmt.Sprintf("%s-%02d", s.prefix, n) }

// scaleSizes are the Guards of BenchmarkScale, each ten times the one
// before: 100, 1,000 and 10,000 objects (10, 100 and 1,000 with -quick).
func scaleSizes() []scaleSize {
	sizes := []scaleSize{
		{"s100", 1, 39, 20},
		{"s1000", 1, 399, 200},
		{"s10000", 10, 399, 200},
	}
	if *quick {
		sizes = []scaleSize{{"s10", 1, 3, 2}, sizes[0], sizes[1]}
	}
	return sizes
}

const (
	scaleDocsPerFile = 25
	scaleReadyWithin = 10 * time.Minute
)

// scaleMemoryLimit is the guard's --memory-limit in BenchmarkScale, as the
// chart derives it from a container's memory limit (empty: none).
var scaleMemoryLimit = flag.String("scale-memory-limit", "", "--memory-limit of the guard in BenchmarkScale (e.g. 128Mi)")

// scaleRun is what one size measured.
type scaleRun struct {
	size        scaleSize
	files       int
	apply       time.Duration // Guard created → Ready with every object
	heapStart   float64       // MiB after GC, before the Guard
	heapApplied float64       // MiB after GC, after the apply
	rssStart    float64
	rssApplied  float64
	hwmApplied  float64
}

// BenchmarkScale runs the guard as a process of its own against its own
// control plane, with one Guard of 100, then 1,000, then 10,000 objects (a
// fresh guard process for each): the time to apply them and the guard's
// memory, and how both grow per tenfold; for the largest, its resident
// memory and the CPU time and API calls of an idle interval that holds one
// no-op full reconcile.
//
// It starts its own control plane and runs only when -bench names it
// (-bench Scale).
func BenchmarkScale(b *testing.B) {
	if f := flag.Lookup("test.bench"); f == nil || !strings.Contains(f.Value.String(), "Scale") {
		b.Skip("runs only when -bench names it (-bench Scale)")
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
	if err := config.WriteCRDs(crds); err != nil {
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
		ctrllog.SetLogger(log)
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
	front, gitRequests := countingGitFront(b, git)
	defer front.Close()
	adminCfg := fastConfig(cluster.Config)
	admin, err := client.New(adminCfg, client.Options{Scheme: app.Scheme()})
	if err != nil {
		b.Fatal(err)
	}
	kube, err := kubernetes.NewForConfig(adminCfg)
	if err != nil {
		b.Fatal(err)
	}
	guardKC, _, err := cluster.AddUser("driftguard", []string{"system:masters"})
	if err != nil {
		b.Fatal(err)
	}
	b.Logf("control plane and Git server up in %s", time.Since(began).Round(time.Millisecond))
	// envtest serves Services from 10.0.0.0/24 (254 addresses); add a range
	// for 2,000 ClusterIPs.
	if err := addServiceCIDR(ctx, kube, "bench-scale", "10.1.0.0/20"); err != nil {
		b.Fatal(err)
	}

	sizes := scaleSizes()
	var runs []scaleRun
	b.ResetTimer()
	for i, sz := range sizes {
		last := i == len(sizes)-1
		rev, files, err := commitScaleRepo(git, sz.prefix, sz)
		if err != nil {
			b.Fatal(err)
		}
		args := []string{"--audit-events=false", "--audit-stdout=false", "--default-interval", "30s"}
		if *scaleMemoryLimit != "" {
			args = append(args, "--memory-limit", *scaleMemoryLimit)
		}
		guard, err := harness.StartProcess(harness.ProcessOptions{Kubeconfig: guardKC, Dir: filepath.Join(dir, sz.prefix), Args: args})
		if err != nil {
			b.Fatal(err)
		}
		alive := func() {
			if done, err := guard.Exited(); done {
				b.Fatalf("%v (set DRIFTGUARD_KEEP_BENCH=1 to keep the log)", err)
			}
		}
		// Up when it answers /readyz and its webhook configuration exists.
		if err := guard.WaitHealthy(60 * time.Second); err != nil {
			b.Fatal(err)
		}
		if err := wait.Until(60*time.Second, func() error {
			alive()
			_, err := kube.AdmissionregistrationV1().ValidatingWebhookConfigurations().Get(ctx, "driftguard", metav1.GetOptions{})
			return err
		}); err != nil {
			b.Fatalf("guard did not register its webhook within 60s (log %s): %v", guard.LogPath, err)
		}
		run := scaleRun{size: sz, files: files}
		run.rssStart, _ = guard.Mem()
		if run.heapStart, err = guard.HeapAfterGC(); err != nil {
			b.Fatal(err)
		}
		g := &v1alpha1.Guard{
			ObjectMeta: metav1.ObjectMeta{Name: sz.prefix},
			Spec: v1alpha1.GuardSpec{
				Git:      &v1alpha1.GitSource{URL: "http://" + front.Addr().String() + "/" + sz.prefix + ".git", Ref: "main"},
				Prune:    true,
				Interval: metav1.Duration{Duration: 30 * time.Second},
			},
		}
		// The largest size's apply under the guard's CPU profile
		// (DRIFTGUARD_BENCH_PROFILE_DIR: the first 20 s from the Guard's
		// creation).
		var profiled func() error
		if dir := os.Getenv("DRIFTGUARD_BENCH_PROFILE_DIR"); dir != "" && i == len(sizes)-1 {
			profiled = guard.StartCPUProfile(filepath.Join(dir, fmt.Sprintf("guard-apply-%d.pprof", sz.objects())), 20*time.Second)
		}
		api0, err := apiRequests(ctx, kube)
		if err != nil {
			b.Fatal(err)
		}
		created := time.Now()
		if err := admin.Create(ctx, g); err != nil {
			b.Fatal(err)
		}
		var got v1alpha1.Guard
		if err := wait.Until(time.Until(created.Add(scaleReadyWithin)), func() error {
			alive()
			if err := admin.Get(ctx, client.ObjectKey{Name: sz.prefix}, &got); err != nil {
				return err
			}
			if !meta.IsStatusConditionTrue(got.Status.Conditions, v1alpha1.ConditionReady) ||
				got.Status.LastAppliedRevision != rev || int(got.Status.ManagedObjects) != sz.objects() {
				return fmt.Errorf("status %+v", got.Status)
			}
			return nil
		}); err != nil {
			b.Fatalf("guard not Ready with %d objects within %s: %v", sz.objects(), scaleReadyWithin, err)
		}
		run.apply = time.Since(created)
		if profiled != nil {
			if err := profiled(); err != nil {
				b.Fatal(err)
			}
		}
		run.rssApplied, run.hwmApplied = guard.Mem()
		if run.heapApplied, err = guard.HeapAfterGC(); err != nil {
			b.Fatal(err)
		}
		api1, err := apiRequests(ctx, kube)
		if err != nil {
			b.Fatal(err)
		}
		runs = append(runs, run)
		b.Logf("%d objects applied and Ready in %s; RSS %.1f MiB, heap after GC %.1f MiB (%.1f before the Guard); API requests per object meanwhile (all clients, WATCH excluded): %s",
			sz.objects(), run.apply.Round(time.Millisecond), run.rssApplied, run.heapApplied, run.heapStart, requestsPer(api0, api1, sz.objects()))
		if last {
			idleInterval(b, ctx, guard, admin, kube, gitRequests, run, dir)
		} else {
			removeScaleGuard(b, ctx, admin, kube, sz)
		}
		if err := guard.Stop(); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	reportGrowth(b, runs)
	b.ReportMetric(0, "ns/op")
}

// reportGrowth prints the table of sizes and the growth figures: per
// tenfold, the ratio of apply times and of the heap the Guard added.
func reportGrowth(b *testing.B, runs []scaleRun) {
	var rows [][]string
	for _, r := range runs {
		rows = append(rows, []string{fmt.Sprint(r.size.objects()), fmt.Sprint(r.files), fmt.Sprintf("%.2f", r.apply.Seconds()),
			fmt.Sprintf("%.1f", r.rssStart), fmt.Sprintf("%.1f", r.rssApplied), fmt.Sprintf("%.1f", r.heapStart), fmt.Sprintf("%.1f", r.heapApplied),
			fmt.Sprintf("%.1f", r.heapApplied-r.heapStart)})
		b.ReportMetric(r.apply.Seconds(), fmt.Sprintf("apply-%d-s", r.size.objects()))
		b.ReportMetric(r.rssApplied, fmt.Sprintf("rss-%d-MiB", r.size.objects()))
	}
	printTable("BenchmarkScale: one Guard per size, a fresh guard process each (audit sinks off)",
		[]string{"objects", "files", "created → Ready (s)", "RSS start (MiB)", "RSS applied (MiB)", "heap start (MiB)", "heap applied (MiB)", "heap added (MiB)"}, rows)
	for i := 1; i < len(runs); i++ {
		a, z := runs[i-1], runs[i]
		step := fmt.Sprintf("%d_to_%d", a.size.objects(), z.size.objects())
		note := fmt.Sprintf("%d → %d objects: %.2f s → %.2f s, heap added %.1f → %.1f MiB", a.size.objects(), z.size.objects(),
			a.apply.Seconds(), z.apply.Seconds(), a.heapApplied-a.heapStart, z.heapApplied-z.heapStart)
		figure(b, withNote(report.NewFigure("reconcile_time_growth_"+step, z.apply.Seconds()/a.apply.Seconds(), "x", report.AtMost, 10), note))
		figure(b, withNote(report.NewFigure("memory_growth_"+step, ratio(z.heapApplied-z.heapStart, a.heapApplied-a.heapStart), "x", report.AtMost, 10), note))
	}
}

// ratio is a/b, or NaN when b is not positive (nothing to compare with).
func ratio(a, b float64) float64 {
	if b <= 0 {
		return nanOr(0, 0)
	}
	return a / b
}

// removeScaleGuard deletes a size's Guard and its objects, so the next size
// starts from a cluster without them. Namespaces stay (Terminating: no
// controller-manager runs to empty them), empty.
func removeScaleGuard(b *testing.B, ctx context.Context, admin client.Client, kube kubernetes.Interface, sz scaleSize) {
	b.Helper()
	if err := admin.Delete(ctx, &v1alpha1.Guard{ObjectMeta: metav1.ObjectMeta{Name: sz.prefix}}); err != nil {
		b.Fatal(err)
	}
	sel := metav1.ListOptions{LabelSelector: apply.GuardLabel + "=" + sz.prefix}
	for n := range sz.namespaces {
		ns := sz.ns(n)
		for _, del := range []func() error{
			func() error { return kube.CoreV1().ConfigMaps(ns).DeleteCollection(ctx, metav1.DeleteOptions{}, sel) },
			func() error { return kube.CoreV1().Secrets(ns).DeleteCollection(ctx, metav1.DeleteOptions{}, sel) },
			func() error { return kube.AppsV1().Deployments(ns).DeleteCollection(ctx, metav1.DeleteOptions{}, sel) },
			func() error {
				svcs, err := kube.CoreV1().Services(ns).List(ctx, sel)
				if err != nil {
					return err
				}
				for _, s := range svcs.Items {
					if err := kube.CoreV1().Services(ns).Delete(ctx, s.Name, metav1.DeleteOptions{}); err != nil {
						return err
					}
				}
				return nil
			},
			func() error { return kube.CoreV1().Namespaces().Delete(ctx, ns, metav1.DeleteOptions{}) },
		} {
			if err := del(); err != nil {
				b.Fatalf("remove %s: %v", ns, err)
			}
		}
	}
}

// idleInterval measures, for the largest size, the guard's memory and an
// idle interval holding one no-op full reconcile, and reports them.
func idleInterval(b *testing.B, ctx context.Context, guard *harness.Process, admin client.Client, kube kubernetes.Interface, gitRequests *atomic.Int64, run scaleRun, dir string) {
	b.Helper()
	alive := func() {
		if done, err := guard.Exited(); done {
			b.Fatal(err)
		}
	}
	n := run.size.objects()
	// The idle interval: from a few seconds after Ready until the next full
	// reconcile (seen as a fetch at the Git front) has finished, i.e. until
	// the guard's CPU time stands still for 3 s.
	time.Sleep(3 * time.Second)
	alive()
	t0, cpu0, git0 := time.Now(), guard.CPUSeconds(), gitRequests.Load()
	api0, err := apiRequests(ctx, kube)
	if err != nil {
		b.Fatal(err)
	}
	var tFetch time.Time
	var cpuFetch float64
	if err := wait.Until(time.Until(t0.Add(90*time.Second)), func() error {
		alive()
		if gitRequests.Load() == git0 {
			return errors.New("no Git fetch yet")
		}
		tFetch, cpuFetch = time.Now(), guard.CPUSeconds()
		return nil
	}); err != nil {
		b.Fatalf("no full reconcile (Git fetch) within 90 s of Ready (30 s interval)")
	}
	still, last := 0, guard.CPUSeconds()
	for deadline := tFetch.Add(3 * time.Minute); still < 3; {
		alive()
		if time.Now().After(deadline) {
			b.Fatalf("the guard's CPU time did not stand still within 3 min of the fetch")
		}
		time.Sleep(time.Second)
		c := guard.CPUSeconds()
		if c-last <= 0.01 { // at most 10 ms in that second
			still++
		} else {
			still = 0
		}
		last = c
	}
	t1, cpu1, git1 := time.Now(), guard.CPUSeconds(), gitRequests.Load()
	api1, err := apiRequests(ctx, kube)
	if err != nil {
		b.Fatal(err)
	}
	rssIdle, hwm := guard.Mem()
	anonIdle, fileIdle := harness.ProcRSSParts(guard.PID)
	if os.Getenv("DRIFTGUARD_KEEP_BENCH") != "" {
		if err := guard.SaveHeapProfile(filepath.Join(dir, "heap.pprof")); err != nil {
			b.Logf("heap profile: %v", err)
		}
	}
	var got v1alpha1.Guard
	if err := admin.Get(ctx, client.ObjectKey{Name: run.size.prefix}, &got); err != nil {
		b.Fatal(err)
	}
	cpuWindow := cpu1 - cpu0
	idleRate := (cpuFetch - cpu0) / tFetch.Sub(t0).Seconds()
	cpuReconcile := cpu1 - cpuFetch
	managedCalls, otherCalls := apiDelta(api0, api1)
	for k, v := range api1 {
		if d := v - api0[k]; d > 0 {
			b.Logf("API requests during the idle interval: %s %.0f", k, d)
		}
	}
	sz := run.size
	printTable(fmt.Sprintf("BenchmarkScale: guard as its own process, one Guard of %d objects (%d Namespaces, %d ConfigMaps, %d Secrets, %d Services, %d Deployments in %d files), interval 30s, audit sinks off",
		n, sz.namespaces, sz.namespaces*sz.configMaps, sz.namespaces*sz.others, sz.namespaces*sz.others, sz.namespaces*sz.others, run.files),
		[]string{"figure", "value", "target"}, [][]string{
			{fmt.Sprintf("Guard created → Ready with %d objects (s)", n), fmt.Sprintf("%.1f", run.apply.Seconds()), ""},
			{"RSS at start-up, before the Guard (MiB)", fmt.Sprintf("%.1f", run.rssStart), ""},
			{"RSS after apply (MiB)", fmt.Sprintf("%.1f", run.rssApplied), "≤ 150"},
			{"RSS after the idle reconcile (MiB)", fmt.Sprintf("%.1f", rssIdle), "≤ 150"},
			{"  of which anonymous (the process's own) / file-backed (binary pages mapped) (MiB)", fmt.Sprintf("%.1f / %.1f", anonIdle, fileIdle), ""},
			{"peak RSS, VmHWM (MiB)", fmt.Sprintf("%.1f (%.1f at Ready)", hwm, run.hwmApplied), ""},
			{"heap in use after GC: start / applied (MiB)", fmt.Sprintf("%.1f / %.1f", run.heapStart, run.heapApplied), ""},
			{"idle interval (s): Ready+3s → next fetch → CPU still for 3s", fmt.Sprintf("%.1f (fetch after %.1f)", t1.Sub(t0).Seconds(), tFetch.Sub(t0).Seconds()), ""},
			{"CPU during the idle interval (s)", fmt.Sprintf("%.2f", cpuWindow), ""},
			{"  of which from the fetch on: no-op full reconcile (s)", fmt.Sprintf("%.2f", cpuReconcile), "< 1"},
			{"  idle before the fetch (CPU s per s)", fmt.Sprintf("%.4f", idleRate), ""},
			{"Git requests in the interval", fmt.Sprint(git1 - git0), ""},
			{"API requests on managed kinds, non-watch (all clients)", fmt.Sprint(managedCalls), "0"},
			{"other API requests, non-watch (all clients, incl. the API server's own)", fmt.Sprint(otherCalls), ""},
			{"Guard status after", fmt.Sprintf("managed %d, drifted %d", got.Status.ManagedObjects, got.Status.DriftedObjects), ""},
		})
	b.ReportMetric(max(run.rssApplied, rssIdle), "rss-MiB")
	b.ReportMetric(cpuReconcile, "noop-reconcile-cpu-s")
	b.ReportMetric(float64(managedCalls), "idle-managed-api-calls")
	note := fmt.Sprintf("%d objects", n)
	if *scaleMemoryLimit != "" {
		note += ", --memory-limit " + *scaleMemoryLimit
	}
	figure(b, withNote(report.NewFigure(fmt.Sprintf("guard_rss_%d_objects", n), max(run.rssApplied, rssIdle), "MiB", report.AtMost, 150), note+", the larger of after apply and after the idle reconcile"))
	figure(b, withNote(report.NewFigure(fmt.Sprintf("noop_reconcile_%d_cpu", n), cpuReconcile, "s", report.Below, 1), note))
	figure(b, withNote(report.NewFigure(fmt.Sprintf("noop_reconcile_%d_api_calls", n), float64(managedCalls), "calls", report.AtMost, 0), note+", non-watch requests on the managed kinds, all clients"))
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
	if err := wait.Until(30*time.Second, func() error {
		got, err := kube.NetworkingV1().ServiceCIDRs().Get(ctx, name, metav1.GetOptions{})
		if err == nil && !meta.IsStatusConditionTrue(got.Status.Conditions, networkingv1.ServiceCIDRConditionReady) {
			err = errors.New("not Ready")
		}
		return err
	}); err != nil {
		return fmt.Errorf("ServiceCIDR %s not Ready within 30s: %w", cidr, err)
	}
	return nil
}

// commitScaleRepo writes the objects of size sz into repository name and
// pushes them; it returns the commit and the number of files.
func commitScaleRepo(git *gitserver.Server, name string, sz scaleSize) (rev string, files int, err error) {
	repo, err := git.NewRepo(name)
	if err != nil {
		return "", 0, err
	}
	write := func(path string, docs []string) error {
		files++
		return repo.WriteFile(path, strings.Join(docs, "---\n"))
	}
	var nss []string
	for n := range sz.namespaces {
		nss = append(nss, fmt.Sprintf("apiVersion: v1\nkind: Namespace\nmetadata:\n  name: %s\n", sz.ns(n)))
	}
	if err := write("namespaces.yaml", nss); err != nil {
		return "", 0, err
	}
	kinds := []struct {
		dir   string
		count int
		doc   func(ns string, i int) string
	}{
		{"configmaps", sz.configMaps, func(ns string, i int) string {
			return fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm-%04d\n  namespace: %s\ndata:\n  mode: production\n  index: \"%d\"\n  greeting: hello from Git\n", i, ns, i)
		}},
		{"secrets", sz.others, func(ns string, i int) string {
			return fmt.Sprintf("apiVersion: v1\nkind: Secret\nmetadata:\n  name: secret-%04d\n  namespace: %s\ntype: Opaque\nstringData:\n  username: app-%d\n  password: s3cr3t-%d\n", i, ns, i, i)
		}},
		{"services", sz.others, func(ns string, i int) string {
			return fmt.Sprintf("apiVersion: v1\nkind: Service\nmetadata:\n  name: svc-%04d\n  namespace: %s\nspec:\n  type: ClusterIP\n  selector:\n    app: app-%04d\n  ports:\n  - name: http\n    port: 80\n    targetPort: 8080\n    protocol: TCP\n", i, ns, i)
		}},
		{"deployments", sz.others, func(ns string, i int) string {
			return fmt.Sprintf("apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: app-%04d\n  namespace: %s\nspec:\n  replicas: 1\n  selector:\n    matchLabels:\n      app: app-%04d\n  template:\n    metadata:\n      labels:\n        app: app-%04d\n    spec:\n      containers:\n      - name: app\n        image: registry.example/app:1.0\n        ports:\n        - containerPort: 8080\n", i, ns, i, i)
		}},
	}
	for n := range sz.namespaces {
		ns := sz.ns(n)
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
	rev, err = repo.CommitAndPush(fmt.Sprintf("%d objects", sz.objects()))
	return rev, files, err
}

// apiRequests reads apiserver_request_total from the API server's /metrics,
// summed per "verb resource" ("verb resource/subresource"), WATCH excluded.
// requestsPer says how many requests of each verb and resource the API
// server served between two readings of apiRequests, per n objects, the
// most first (those under 0.01 per object left out).
func requestsPer(before, after map[string]float64, n int) string {
	type count struct {
		key string
		per float64
	}
	var counts []count
	for k, v := range after {
		if per := (v - before[k]) / float64(n); per >= 0.01 {
			counts = append(counts, count{k, per})
		}
	}
	slices.SortFunc(counts, func(a, b count) int { return cmp.Compare(b.per, a.per) })
	var parts []string
	for _, c := range counts {
		parts = append(parts, fmt.Sprintf("%s %.2f", c.key, c.per))
	}
	return strings.Join(parts, ", ")
}

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
		if sub := metricLabel(labels, "subresource"); sub != "" {
			resource += "/" + sub
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
		resource, _, _ = strings.Cut(resource, "/")
		if kinds[resource] {
			managed += d
		} else {
			other += d
		}
	}
	return managed, other
}

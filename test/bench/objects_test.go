package bench

import (
	"context"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/driftguard/driftguard/api/v1alpha1"
	"github.com/driftguard/driftguard/gitserver"
	"github.com/driftguard/driftguard/test/harness"
)

// objectsSize is one run of BenchmarkManyObjects: guards Guards of one
// repository, each its own folder of nsPerGuard namespaces, each namespace
// perKind ConfigMaps, Secrets, Services and Deployments (0 replicas).
type objectsSize struct{ guards, nsPerGuard, perKind int }

// objectKinds are the kinds of a namespace of BenchmarkManyObjects.
const objectKinds = 4

func (s objectsSize) perGuard() int      { return s.nsPerGuard * objectKinds * s.perKind }
func (s objectsSize) objects() int       { return s.guards * s.perGuard() }
func (s objectsSize) namespaces() int    { return s.guards * s.nsPerGuard }
func (s objectsSize) name() string       { return fmt.Sprintf("objects-%d", s.objects()) }
func (s objectsSize) prefix() string     { return fmt.Sprintf("o%d-g", s.objects()) }
func (s objectsSize) guard(g int) string { return fmt.Sprintf("%s%02d", s.prefix(), g) }
func (s objectsSize) ns(g, n int) string { return fmt.Sprintf("%s%02d-n%02d", s.prefix(), g, n) }

// objectsSizes are the runs of BenchmarkManyObjects, each with a guard
// process of its own: 1,000 objects, then 100,000 over 10 Guards and 100
// namespaces (10,000 over 10 namespaces with -quick). The small run gives
// the per-object figures the large one is compared with.
func objectsSizes() []objectsSize {
	small := objectsSize{10, 1, 25}
	if *quick {
		return []objectsSize{small, {10, 1, 250}}
	}
	return []objectsSize{small, {10, 10, 250}}
}

// Goals of issue 18 at 100,000 objects, and the published figure the
// creation time is held against.
const (
	objectsRSSGoal     = 500.0 // MiB, the guard's peak resident memory
	objectsCPUGoal     = 4.0   // s of CPU for one idle full reconcile of every Guard
	objectsRevertGoal  = 20.0  // ms, revert p99 at 100 edits/s
	objectsProfileFor  = 15 * time.Second
	objectsEditRate    = 100.0 // edits/s over all Guards
	configSyncPerSec   = 10000.0 / 120
	objectsDocsPerFile = 25
)

// objectsEtcdQuota is etcd's --quota-backend-bytes in BenchmarkManyObjects.
var objectsEtcdQuota = flag.String("objects-etcd-quota", "", "etcd's --quota-backend-bytes in BenchmarkManyObjects (empty: etcd's default, 2 GiB)")

// objectsRun is what one size of BenchmarkManyObjects measured.
type objectsRun struct {
	size                          objectsSize
	files                         int
	ready                         time.Duration
	rssStart, heapStart           float64 // MiB, the guard before its Guards
	rssReady, heapReady, hwm      float64 // MiB, once all are Ready (hwm: the run's peak)
	apiRSS, etcdRSS               float64 // MiB, at Ready
	etcdDB, etcdQuota             float64 // bytes, at Ready
	reconcileCPU                  float64 // s, one no-op full reconcile of every Guard
	reconcileWall                 time.Duration
	managedWrites, otherRequests  int // API server requests during it
	guardRequests                 int // the guard's own requests during it
	revert                        []time.Duration
	editWrite                     []time.Duration // each edit's own request, sent → answered
	edits, unreverted, editErrors int
}

// BenchmarkManyObjects is issue 18's many-objects shape: 100,000 objects
// (10,000 with -quick) of four kinds over 10 Guards and 100 namespaces, on
// a control plane of its own, the guard a process of its own (audit sinks
// off, webhook not registered so that edits land and self-heal reverts
// them), after a run of 1,000 objects in the same shape with a guard
// process of its own. Per size: the 10 Guards created at once → all Ready;
// the guard's resident memory and heap; etcd's database against its quota
// and the API server's memory; one idle full reconcile of every Guard
// (asked by a push notification of the unchanged repository): the guard's
// CPU and the API server's requests; then self-heal at 100 edits/s over the
// ConfigMaps of every Guard. Growth: per object, against the 1,000-object
// run.
//
// It runs only when -bench names it (-bench ManyObjects).
func BenchmarkManyObjects(b *testing.B) {
	if f := flag.Lookup("test.bench"); f == nil || !strings.Contains(f.Value.String(), "ManyObjects") {
		b.Skip("runs only when -bench names it (-bench ManyObjects)")
	}
	ctx := context.Background()
	var etcdFlags map[string]string
	if *objectsEtcdQuota != "" {
		etcdFlags = map[string]string{"quota-backend-bytes": *objectsEtcdQuota}
	}
	p := startPlane(b, "objects", etcdFlags)
	// envtest serves Services from 10.0.0.0/24; the large run has 25,000.
	if err := addServiceCIDR(ctx, p.kube, "bench-objects", "10.64.0.0/16"); err != nil {
		b.Fatal(err)
	}
	sizes := objectsSizes()
	var runs []objectsRun
	b.ResetTimer()
	for i, sz := range sizes {
		run := runObjects(b, ctx, p, sz, i == len(sizes)-1)
		runs = append(runs, run)
		reportObjects(b, run)
	}
	b.StopTimer()
	reportObjectsGrowth(b, runs[0], runs[len(runs)-1])
	b.ReportMetric(0, "ns/op")
}

// runObjects runs one size with a fresh guard process; unless last, it
// deletes the size's Guards and objects afterwards.
func runObjects(b *testing.B, ctx context.Context, p *plane, sz objectsSize, last bool) objectsRun {
	b.Helper()
	run := objectsRun{size: sz}
	rev, files, err := commitObjectsRepo(p.git, sz)
	if err != nil {
		b.Fatal(err)
	}
	run.files = files
	var nss []string
	for g := range sz.guards {
		for n := range sz.nsPerGuard {
			nss = append(nss, sz.ns(g, n))
		}
	}
	if err := p.createNamespaces(ctx, nss); err != nil {
		b.Fatal(err)
	}
	guard, err := harness.StartProcess(harness.ProcessOptions{Kubeconfig: p.guardKC, Dir: filepath.Join(p.dir, sz.name()),
		Args: []string{"--audit-events=false", "--audit-stdout=false", "--webhook-register=false", "--default-interval=1h"}})
	if err != nil {
		b.Fatal(err)
	}
	defer func() { _ = guard.Stop() }()
	if err := guard.WaitHealthy(60 * time.Second); err != nil {
		b.Fatal(err)
	}
	run.rssStart, _ = guard.Mem()
	if run.heapStart, err = guard.HeapAfterGC(); err != nil {
		b.Fatal(err)
	}
	repoURL := p.gitURL + "/" + sz.name() + ".git"
	created := time.Now()
	var guards []int
	for g := range sz.guards {
		guards = append(guards, g)
	}
	if err := forEach(guards, func(g int) error {
		return p.admin.Create(ctx, &v1alpha1.Guard{ObjectMeta: metav1.ObjectMeta{Name: sz.guard(g)}, Spec: v1alpha1.GuardSpec{
			Git: &v1alpha1.GitSource{URL: repoURL, Ref: "main", Path: fmt.Sprintf("g%02d", g)}, Prune: true, Interval: metav1.Duration{Duration: time.Hour},
		}})
	}); err != nil {
		b.Fatal(err)
	}
	if err := waitObjectsReady(ctx, p, guard, sz, rev, created); err != nil {
		b.Fatal(err)
	}
	run.ready = time.Since(created)
	run.rssReady, _ = guard.Mem()
	if run.heapReady, err = guard.HeapAfterGC(); err != nil {
		b.Fatal(err)
	}
	if dir := os.Getenv("DRIFTGUARD_BENCH_PROFILE_DIR"); dir != "" {
		if err := guard.SaveHeapProfile(filepath.Join(dir, fmt.Sprintf("guard-heap-ready-%d.pprof", sz.objects()))); err != nil {
			b.Fatal(err)
		}
	}
	run.apiRSS, run.etcdRSS = p.controlPlaneMem()
	if run.etcdDB, run.etcdQuota, err = p.etcdSize(ctx); err != nil {
		b.Logf("etcd size: %v", err)
	}
	b.Logf("%d objects: all %d Guards Ready in %s (load %s); guard RSS %.1f MiB, heap after GC %.1f MiB; kube-apiserver %.0f MiB, etcd %.0f MiB, etcd database %.0f MiB of a %.0f MiB quota",
		sz.objects(), sz.guards, run.ready.Round(time.Millisecond), loadAvg(), run.rssReady, run.heapReady, run.apiRSS, run.etcdRSS, run.etcdDB/(1<<20), run.etcdQuota/(1<<20))
	if err := idleObjectsReconcile(ctx, p, guard, sz, repoURL, &run); err != nil {
		b.Fatal(err)
	}
	if err := objectsSelfHeal(p, sz, &run); err != nil {
		b.Fatal(err)
	}
	_, run.hwm = guard.Mem()
	if !last {
		if err := clearObjects(ctx, p, sz); err != nil {
			b.Fatal(err)
		}
	}
	return run
}

// waitObjectsReady polls the size's Guards until every one is Ready with rev
// applied and all its objects, logging progress every 30 s. It stops early
// when the guard or the API server has exited or a Guard's status names
// etcd's quota: that is where this machine's limit is.
func waitObjectsReady(ctx context.Context, p *plane, guard *harness.Process, sz objectsSize, rev string, created time.Time) error {
	deadline := created.Add(10*time.Minute + time.Duration(sz.objects())*20*time.Millisecond)
	lastLog := time.Now()
	for ; ; time.Sleep(time.Second) {
		if done, err := guard.Exited(); done {
			return fmt.Errorf("the guard exited: %w (log %s)", err, guard.LogPath)
		}
		if api, _ := p.controlPlaneMem(); api == 0 {
			return fmt.Errorf("kube-apiserver is gone while %d objects were applied (out of memory? see %s)", sz.objects(), p.cluster.Dir)
		}
		var list v1alpha1.GuardList
		if err := p.admin.List(ctx, &list); err != nil {
			return fmt.Errorf("list Guards: %w", err)
		}
		ready := 0
		for _, g := range list.Items {
			if !strings.HasPrefix(g.Name, sz.prefix()) {
				continue
			}
			c := meta.FindStatusCondition(g.Status.Conditions, v1alpha1.ConditionReady)
			if c != nil && c.Status == metav1.ConditionTrue && g.Status.LastAppliedRevision == rev && int(g.Status.ManagedObjects) == sz.perGuard() {
				ready++
			} else if c != nil && strings.Contains(c.Message, "database space exceeded") {
				db, quota, _ := p.etcdSize(ctx)
				return fmt.Errorf("etcd's quota is the limit: Guard %s: %s (etcd database %.0f MiB of %.0f MiB; raise it with -objects-etcd-quota)", g.Name, c.Message, db/(1<<20), quota/(1<<20))
			}
		}
		if ready == sz.guards {
			return nil
		}
		if time.Since(lastLog) > 30*time.Second {
			lastLog = time.Now()
			fmt.Println(objectsProgress(ctx, p, guard, sz, created, ready))
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("not all Ready within %s: %s", deadline.Sub(created).Round(time.Second), objectsProgress(ctx, p, guard, sz, created, ready))
		}
	}
}

// objectsProgress says how far the apply of a size has come: Guards Ready,
// objects of the four kinds in the cluster and their rate since the Guards
// were created, and the memory of the guard, kube-apiserver and etcd.
func objectsProgress(ctx context.Context, p *plane, guard *harness.Process, sz objectsSize, created time.Time, ready int) string {
	db, _, _ := p.etcdSize(ctx)
	api, etcd := p.controlPlaneMem()
	rss, hwm := guard.Mem()
	n, err := p.countObjects(ctx)
	objects := fmt.Sprint(n)
	if err != nil {
		objects = err.Error()
	}
	since := time.Since(created)
	return fmt.Sprintf("objects: %d objects: %s after creation, %d of %d Guards Ready, %s objects in the cluster (%.0f/s); guard %.0f MiB (peak %.0f), kube-apiserver %.0f MiB, etcd %.0f MiB (database %.0f MiB); load %s",
		sz.objects(), since.Round(time.Second), ready, sz.guards, objects, float64(n)/since.Seconds(), rss, hwm, api, etcd, db/(1<<20), loadAvg())
}

// idleObjectsReconcile asks for a full reconcile of every Guard (a push
// notification of the unchanged repository) and measures the guard's CPU
// for it, less its idle rate, and the requests the API server served
// meanwhile (all clients, WATCH excluded).
func idleObjectsReconcile(ctx context.Context, p *plane, guard *harness.Process, sz objectsSize, repoURL string, run *objectsRun) error {
	time.Sleep(3 * time.Second)
	cpuIdle, tIdle := guard.CPUSeconds(), time.Now()
	time.Sleep(3 * time.Second)
	syncs0, err := guard.Metric("driftguard_sync_total")
	if err != nil {
		return err
	}
	rest0, _ := guard.Metric("rest_client_requests_total")
	api0, err := apiRequests(ctx, p.kube)
	if err != nil {
		return err
	}
	// DRIFTGUARD_BENCH_PROFILE_DIR: where the reconcile's CPU goes (the
	// profile runs past its end, idle).
	profiled := func() error { return nil }
	if dir := os.Getenv("DRIFTGUARD_BENCH_PROFILE_DIR"); dir != "" {
		profiled = guard.StartCPUProfile(filepath.Join(dir, fmt.Sprintf("guard-idle-reconcile-%d.pprof", sz.objects())), objectsProfileFor)
		time.Sleep(100 * time.Millisecond) // the profile has begun
	}
	t0, cpu0 := time.Now(), guard.CPUSeconds()
	idleRate := (cpu0 - cpuIdle) / t0.Sub(tIdle).Seconds()
	if err := guard.NotifyPush(ctx, repoURL); err != nil {
		return fmt.Errorf("push notification: %w", err)
	}
	for deadline := t0.Add(10 * time.Minute); ; time.Sleep(50 * time.Millisecond) {
		syncs, err := guard.Metric("driftguard_sync_total")
		if err != nil {
			return err
		}
		if syncs-syncs0 >= float64(sz.guards) {
			break
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%.0f of %d Guards reconciled within 10 minutes of the push notification", syncs-syncs0, sz.guards)
		}
	}
	t1, cpu1 := time.Now(), guard.CPUSeconds()
	time.Sleep(time.Second) // the last status writes reach the API server's counters
	rest1, _ := guard.Metric("rest_client_requests_total")
	api1, err := apiRequests(ctx, p.kube)
	if err != nil {
		return err
	}
	if err := profiled(); err != nil {
		return err
	}
	run.reconcileWall = t1.Sub(t0)
	run.reconcileCPU = max(0, cpu1-cpu0-idleRate*run.reconcileWall.Seconds())
	run.managedWrites, run.otherRequests = managedWrites(api0, api1)
	run.guardRequests = int(rest1 - rest0)
	return nil
}

// managedWrites counts the writes on the managed kinds between two readings
// of apiRequests, and every other request.
func managedWrites(before, after map[string]float64) (writes, other int) {
	kinds := []string{"namespaces", "configmaps", "secrets", "services", "deployments"}
	for k, v := range after {
		d := int(v - before[k])
		if d <= 0 {
			continue
		}
		verb, resource, _ := strings.Cut(k, " ")
		resource, _, _ = strings.Cut(resource, "/")
		if slices.Contains(kinds, resource) && verb != "GET" && verb != "LIST" {
			writes += d
		} else {
			other += d
		}
	}
	return writes, other
}

// objectsSelfHeal edits the ConfigMaps of each Guard's first namespace,
// objectsEditRate edits/s in all (3 s of them with -quick, else 10 s), and
// measures each revert with an informer of its own per namespace.
func objectsSelfHeal(p *plane, sz objectsSize, run *objectsRun) error {
	dur := 10 * time.Second
	if *quick {
		dur = 3 * time.Second
	}
	rate := objectsEditRate / float64(sz.guards)
	var mu sync.Mutex
	var eg sync.WaitGroup
	errs := make([]error, sz.guards)
	for g := range sz.guards {
		eg.Go(func() {
			ns := sz.ns(g, 0)
			w, err := watchConfigMaps(p.kube, ns)
			if err != nil {
				errs[g] = err
				return
			}
			defer w.shutdown()
			targets := make([]int, int(rate*dur.Seconds()))
			for i := range targets {
				targets[i] = rand.IntN(sz.perKind)
			}
			// The generators take turns: 100 edits/s evenly, not bursts
			// of one edit per Guard at the same instant.
			time.Sleep(time.Duration(g) * time.Second / objectsEditRate)
			edits := load(p.kube, ns, fmt.Sprintf("heal-%02d", g), targets, rate, 8, dur)
			waitReverted(edits, w)
			o := analyze(edits, w, nil)
			mu.Lock()
			defer mu.Unlock()
			run.revert = append(run.revert, o.revert...)
			run.editWrite = append(run.editWrite, o.apiLatency...)
			run.edits += len(edits)
			run.unreverted += o.unreverted
			run.editErrors += o.failed
		})
	}
	eg.Wait()
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// clearObjects deletes a size's Guards (while their guard still runs) and
// then their objects and namespaces, so the next size starts without them.
func clearObjects(ctx context.Context, p *plane, sz objectsSize) error {
	var guards []string
	for g := range sz.guards {
		guards = append(guards, sz.guard(g))
	}
	if err := forEach(guards, func(name string) error {
		return p.admin.Delete(ctx, &v1alpha1.Guard{ObjectMeta: metav1.ObjectMeta{Name: name}})
	}); err != nil {
		return fmt.Errorf("delete Guards: %w", err)
	}
	if err := waitGone(2*time.Minute, "Guards", func() (int, error) {
		var list v1alpha1.GuardList
		err := p.admin.List(ctx, &list)
		return len(list.Items), err
	}); err != nil {
		return err
	}
	var nss []string
	for g := range sz.guards {
		for n := range sz.nsPerGuard {
			nss = append(nss, sz.ns(g, n))
		}
	}
	return forEach(nss, func(ns string) error { return clearNamespace(ctx, p, ns) })
}

// clearNamespace deletes the objects of the four kinds in ns, then ns
// (Terminating for good: no controller-manager runs to finish it).
func clearNamespace(ctx context.Context, p *plane, ns string) error {
	all := metav1.ListOptions{}
	del := metav1.DeleteOptions{}
	for _, step := range []func() error{
		func() error { return p.kube.CoreV1().ConfigMaps(ns).DeleteCollection(ctx, del, all) },
		func() error { return p.kube.CoreV1().Secrets(ns).DeleteCollection(ctx, del, all) },
		func() error { return p.kube.AppsV1().Deployments(ns).DeleteCollection(ctx, del, all) },
		func() error {
			svcs, err := p.kube.CoreV1().Services(ns).List(ctx, all)
			if err != nil {
				return err
			}
			for _, s := range svcs.Items {
				if err := p.kube.CoreV1().Services(ns).Delete(ctx, s.Name, del); err != nil {
					return err
				}
			}
			return nil
		},
		func() error { return p.kube.CoreV1().Namespaces().Delete(ctx, ns, del) },
	} {
		if err := step(); err != nil {
			return fmt.Errorf("clear namespace %s: %w", ns, err)
		}
	}
	return nil
}

// commitObjectsRepo writes a size's objects into a repository of its own,
// folder gNN per Guard, objectsDocsPerFile documents a file, and pushes
// them; it returns the commit and the number of files.
func commitObjectsRepo(git *gitserver.Server, sz objectsSize) (rev string, files int, err error) {
	repo, err := git.NewRepo(sz.name())
	if err != nil {
		return "", 0, err
	}
	for g := range sz.guards {
		for n := range sz.nsPerGuard {
			ns := sz.ns(g, n)
			for _, kind := range []string{"configmaps", "secrets", "services", "deployments"} {
				for start := 0; start < sz.perKind; start += objectsDocsPerFile {
					var docs []string
					for i := start; i < min(start+objectsDocsPerFile, sz.perKind); i++ {
						docs = append(docs, objectDoc(kind, ns, i))
					}
					path := fmt.Sprintf("g%02d/%s/%s-%02d.yaml", g, ns, kind, start/objectsDocsPerFile)
					if err := repo.WriteFile(path, strings.Join(docs, "---\n")); err != nil {
						return "", 0, err
					}
					files++
				}
			}
		}
	}
	rev, err = repo.CommitAndPush(fmt.Sprintf("%d objects", sz.objects()))
	return rev, files, err
}

// objectDoc is object i of a kind in ns. ConfigMaps are cmName(i) with
// data.value gitValue, as the self-heal load and watch expect.
func objectDoc(kind, ns string, i int) string {
	switch kind {
	case "configmaps":
		return fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: %s\n  namespace: %s\ndata:\n  value: %s\n  index: \"%d\"\n  greeting: hello from Git\n", cmName(i), ns, gitValue, i)
	case "secrets":
		return fmt.Sprintf("apiVersion: v1\nkind: Secret\nmetadata:\n  name: secret-%04d\n  namespace: %s\ntype: Opaque\nstringData:\n  username: app-%d\n  password: s3cr3t-%d\n", i, ns, i, i)
	case "services":
		return fmt.Sprintf("apiVersion: v1\nkind: Service\nmetadata:\n  name: svc-%04d\n  namespace: %s\nspec:\n  selector:\n    app: app-%04d\n  ports:\n  - name: http\n    port: 80\n    targetPort: 8080\n", i, ns, i)
	default:
		return fmt.Sprintf("apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: app-%04d\n  namespace: %s\nspec:\n  replicas: 0\n  selector:\n    matchLabels:\n      app: app-%04d\n  template:\n    metadata:\n      labels:\n        app: app-%04d\n    spec:\n      containers:\n      - name: app\n        image: registry.example/app:1.0\n", i, ns, i, i)
	}
}

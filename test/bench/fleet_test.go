package bench

import (
	"cmp"
	"context"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sync/errgroup"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/driftguard/driftguard/api/v1alpha1"
	"github.com/driftguard/driftguard/app"
	"github.com/driftguard/driftguard/config"
	"github.com/driftguard/driftguard/devenv"
	"github.com/driftguard/driftguard/gitserver"
	"github.com/driftguard/driftguard/test/bench/report"
	"github.com/driftguard/driftguard/test/harness"
)

// fleetRun is one shape of BenchmarkManyGuards: guards Guards spread over
// repos repositories, each Guard its own folder of fleetObjects objects.
type fleetRun struct {
	name          string
	guards, repos int
}

// fleetObjects is what each Guard holds, Flux's published shape: a
// Deployment with 0 replicas, a ServiceAccount, a Service and an Ingress.
const fleetObjects = 4

// Goals of issue 18 for 1,000 Guards on 2 cores.
const (
	fleetReadyGoal = 60.0  // s, all Ready after they are created at once
	fleetRSSGoal   = 150.0 // MiB, the guard's peak resident memory
)

func fleetManifest(ns, name string, generation int) string {
	return fmt.Sprintf(`apiVersion: apps/v1
kind: Deployment
metadata: {name: %[2]s, namespace: %[1]s, annotations: {fleet/generation: "%[3]d"}}
spec:
  replicas: 0
  selector: {matchLabels: {app: %[2]s}}
  template:
    metadata: {labels: {app: %[2]s}}
    spec:
      serviceAccountName: %[2]s
      containers: [{name: app, image: "registry.example/app:1.0"}]
---
apiVersion: v1
kind: ServiceAccount
metadata: {name: %[2]s, namespace: %[1]s}
---
apiVersion: v1
kind: Service
metadata: {name: %[2]s, namespace: %[1]s}
spec:
  selector: {app: %[2]s}
  ports: [{port: 80, targetPort: 8080}]
---
apiVersion: networking.k8s.io/v1
kind: Ingress
metadata: {name: %[2]s, namespace: %[1]s}
spec:
  rules:
  - host: %[2]s.example
    http:
      paths:
      - {path: /, pathType: Prefix, backend: {service: {name: %[2]s, port: {number: 80}}}}
`, ns, name, generation)
}

// BenchmarkManyGuards is Flux's fleet shape: 1,000 Guards (100 with
// -quick), each its own folder of 4 objects, created at once, first in one
// repository and then spread over 100 (10 with -quick), each run with a
// fresh guard process on one control plane: the time until every Guard is
// Ready, the guard's peak resident memory, its API requests and the Git
// requests; then one commit that changes every Guard's objects, announced
// by one push notification per repository, and the time until every Guard
// has applied it.
//
// It starts its own control plane and runs only when -bench names it
// (-bench ManyGuards).
func BenchmarkManyGuards(b *testing.B) {
	if f := flag.Lookup("test.bench"); f == nil || !strings.Contains(f.Value.String(), "ManyGuards") {
		b.Skip("runs only when -bench names it (-bench ManyGuards)")
	}
	if missing := devenv.MissingBinaries("", false); len(missing) > 0 {
		b.Skipf("control-plane binaries missing in %s: %v", devenv.DefaultBinDir(), missing)
	}
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "driftguard-bench-fleet-")
	if err != nil {
		b.Fatal(err)
	}
	defer os.RemoveAll(dir)
	crds := filepath.Join(dir, "crds")
	if err := config.WriteCRDs(crds); err != nil {
		b.Fatal(err)
	}
	cluster, err := devenv.Start(ctx, devenv.Options{CRDDirs: []string{crds}, Dir: filepath.Join(dir, "cluster"), Log: zap.New(zap.WriteTo(logWriterFor(dir)))})
	if err != nil {
		b.Fatal(err)
	}
	defer func() { _ = cluster.Stop() }()
	git, err := gitserver.Start(filepath.Join(dir, "git"))
	if err != nil {
		b.Fatal(err)
	}
	defer func() { _ = git.Close() }()
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
	if err := addServiceCIDR(ctx, kube, "bench-fleet", "10.2.0.0/19"); err != nil {
		b.Fatal(err)
	}
	runs := []fleetRun{{"one repository", 1000, 1}, {"100 repositories", 1000, 100}}
	if *quick {
		runs = []fleetRun{{"one repository", 100, 1}, {"10 repositories", 100, 10}}
	}
	b.ResetTimer()
	for i, r := range runs {
		ns := fmt.Sprintf("fleet-%d", i)
		if err := admin.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
			b.Fatal(err)
		}
		runFleet(b, ctx, r, ns, filepath.Join(dir, fmt.Sprint(i)), guardKC, admin, kube, git, "http://"+front.Addr().String(), gitRequests)
		// The next shape starts from a cluster without this one's Guards: a
		// guard process reconciles every Guard of its shard, and the first
		// runs' 1,000 Guards, left in place, doubled the second's work.
		if err := clearFleet(ctx, admin, kube, ns); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	b.ReportMetric(0, "ns/op")
}

func runFleet(b *testing.B, ctx context.Context, r fleetRun, ns, dir, guardKC string, admin client.Client, kube kubernetes.Interface, git *gitserver.Server, gitURL string, gitRequests *atomic.Int64) {
	b.Helper()
	repoOf := func(g int) string { return fmt.Sprintf("%s-r%03d", ns, g%r.repos) }
	guardName := func(g int) string { return fmt.Sprintf("%s-g%04d", ns, g) }
	repos := map[string]*gitserver.Repo{}
	repoOfGuard := map[string]string{}
	for g := range r.guards {
		name := repoOf(g)
		repoOfGuard[guardName(g)] = name
		if repos[name] == nil {
			repo, err := git.NewRepo(name)
			if err != nil {
				b.Fatal(err)
			}
			repos[name] = repo
		}
	}
	commit := func(generation int) map[string]string {
		for g := range r.guards {
			if err := repos[repoOf(g)].WriteFile("apps/"+guardName(g)+"/app.yaml", fleetManifest(ns, guardName(g), generation)); err != nil {
				b.Fatal(err)
			}
		}
		revs := map[string]string{}
		for name, repo := range repos {
			rev, err := repo.CommitAndPush(fmt.Sprintf("generation %d", generation))
			if err != nil {
				b.Fatal(err)
			}
			revs[name] = rev
		}
		return revs
	}
	revs := commit(0)
	guard, err := harness.StartProcess(harness.ProcessOptions{Kubeconfig: guardKC, Dir: dir,
		Args: []string{"--audit-events=false", "--audit-stdout=false", "--default-interval=10m"}})
	if err != nil {
		b.Fatal(err)
	}
	defer func() { _ = guard.Stop() }()
	if err := guard.WaitHealthy(60 * time.Second); err != nil {
		b.Fatal(err)
	}
	apiBefore, _ := guard.Metric("rest_client_requests_total")
	gitBefore := gitRequests.Load()
	serverBefore, _ := apiRequests(ctx, kube)
	loadStart := loadAvg()

	// Every Guard created at once (16 writers).
	created := time.Now()
	var eg errgroup.Group
	eg.SetLimit(16)
	for g := range r.guards {
		eg.Go(func() error {
			return admin.Create(ctx, &v1alpha1.Guard{ObjectMeta: metav1.ObjectMeta{Name: guardName(g)}, Spec: v1alpha1.GuardSpec{
				Git: &v1alpha1.GitSource{URL: gitURL + "/" + repoOf(g) + ".git", Ref: "main", Path: "apps/" + guardName(g)}, Interval: metav1.Duration{Duration: 10 * time.Minute},
			}})
		})
	}
	if err := eg.Wait(); err != nil {
		b.Fatal(err)
	}
	if pd := os.Getenv("DRIFTGUARD_BENCH_PROFILE_DIR"); pd != "" {
		// Where the guard's time goes while it applies the fleet.
		go func() {
			resp, err := http.Get("http://" + guard.PprofAddr + "/debug/pprof/profile?seconds=10")
			if err != nil {
				return
			}
			defer resp.Body.Close()
			if f, err := os.Create(filepath.Join(pd, ns+"-guard.pprof")); err == nil {
				_, _ = io.Copy(f, resp.Body)
				_ = f.Close()
			}
		}()
	}
	allApplied := func(what string, revs map[string]string) time.Duration {
		start := time.Now()
		for deadline := start.Add(15 * time.Minute); ; time.Sleep(250 * time.Millisecond) {
			if done, err := guard.Exited(); done {
				b.Fatalf("the guard exited: %v", err)
			}
			var list v1alpha1.GuardList
			if err := admin.List(ctx, &list); err != nil {
				b.Fatal(err)
			}
			ready := 0
			for _, g := range list.Items {
				repo, ours := repoOfGuard[g.Name]
				if ours && meta.IsStatusConditionTrue(g.Status.Conditions, v1alpha1.ConditionReady) &&
					g.Status.LastAppliedRevision == revs[repo] && g.Status.ManagedObjects == fleetObjects {
					ready++
				}
			}
			if ready == r.guards {
				return time.Since(start)
			}
			if time.Now().After(deadline) {
				b.Fatalf("%s: %d of %d Guards Ready within 15 minutes", what, ready, r.guards)
			}
		}
	}
	allApplied("created at once", revs)
	ready := time.Since(created)
	_, hwm := guard.Mem()
	apiAfter, _ := guard.Metric("rest_client_requests_total")
	gitAfter := gitRequests.Load()
	serverAfter, _ := apiRequests(ctx, kube)
	loadReady := loadAvg()
	if pd := os.Getenv("DRIFTGUARD_BENCH_PROFILE_DIR"); pd != "" {
		// What the guard holds once every Guard is Ready.
		if err := guard.SaveHeapProfile(filepath.Join(pd, ns+"-guard-heap.pprof")); err != nil {
			b.Logf("heap profile: %v", err)
		}
	}

	// One commit that changes every Guard's objects; one push notification
	// per repository.
	revs = commit(1)
	pushed := time.Now()
	for name := range revs {
		if err := guard.NotifyPush(ctx, gitURL+"/"+name+".git"); err != nil {
			b.Fatalf("push notification: %v", err)
		}
	}
	allApplied("one commit to every Guard", revs)
	update := time.Since(pushed)
	_, hwm2 := guard.Mem()
	apiUpdate, _ := guard.Metric("rest_client_requests_total")
	gitUpdate := gitRequests.Load()
	serverUpdate, _ := apiRequests(ctx, kube)

	label := fmt.Sprintf("%d Guards, %s", r.guards, r.name)
	f := report.NewFigure("fleet: "+label+": created → all Ready", ready.Seconds(), "s", report.AtMost, fleetReadyGoal)
	f.Note = fmt.Sprintf("%d objects; Flux 2.9: 1,000 Kustomizations of 4 objects in 253 s on 16 cores; %d API requests, %d Git requests by the guard",
		r.guards*fleetObjects, int(apiAfter-apiBefore), gitAfter-gitBefore)
	figure(b, f)
	figure(b, withNote(report.NewFigure("fleet: "+label+": peak RSS", max(hwm, hwm2), "MiB", report.AtMost, fleetRSSGoal), "Flux 2.9: 223 MiB for 1,000 Kustomizations"))
	figure(b, withNote(report.NewFigure("fleet: "+label+": one commit to every Guard → all applied", update.Seconds(), "s", report.AtMost, fleetReadyGoal),
		fmt.Sprintf("one push notification per repository (%d)", len(revs))))
	figure(b, withNote(report.NewFigure("fleet: "+label+": API requests per Guard, created → all Ready", (apiAfter-apiBefore)/float64(r.guards), "requests", report.AtMost, fleetAPIRequestsGoal),
		"the guard's rest_client_requests_total; a count, independent of the machine's load"))
	figure(b, withNote(report.NewFigure("fleet: "+label+": Git requests per Guard, created → all Ready", float64(gitAfter-gitBefore)/float64(r.guards), "requests", report.AtMost, fleetGitRequestsGoal),
		fmt.Sprintf("HTTP requests at the Git server, %d repositories", r.repos)))
	b.Logf("%s: Ready in %s (load %s → %s), update in %s (load %s), peak RSS %.1f MiB; created → Ready: %d API requests, %d Git requests; the commit: %d API requests, %d Git requests",
		label, ready.Round(time.Millisecond), loadStart, loadReady, update.Round(time.Millisecond), loadAvg(), max(hwm, hwm2),
		int(apiAfter-apiBefore), gitAfter-gitBefore, int(apiUpdate-apiAfter), gitUpdate-gitAfter)
	b.Logf("%s: API server requests, created → Ready: %s", label, requestsTable(serverBefore, serverAfter))
	b.Logf("%s: API server requests, the commit: %s", label, requestsTable(serverAfter, serverUpdate))
}

// Counting goals of BenchmarkManyGuards, per Guard: what one reconcile of a
// new Guard of 4 objects needs (read and write its inventory, 4 applies,
// its status, an Event) and one ref listing.
const (
	fleetAPIRequestsGoal = 10.0
	fleetGitRequestsGoal = 1.0
)

// requestsTable lists the API server's requests between two readings of
// apiRequests, most first ("PATCH guards/status 1000, ..."). The
// benchmark's own are among them: the Guards' creation and a list of
// Guards every 250 ms.
func requestsTable(before, after map[string]float64) string {
	type row struct {
		key string
		n   int
	}
	var rows []row
	for k, v := range after {
		if d := int(v - before[k]); d > 0 {
			rows = append(rows, row{k, d})
		}
	}
	slices.SortFunc(rows, func(a, b row) int { return cmp.Or(b.n-a.n, strings.Compare(a.key, b.key)) })
	parts := make([]string, len(rows))
	for i, r := range rows {
		parts[i] = fmt.Sprintf("%s %d", r.key, r.n)
	}
	return strings.Join(parts, ", ")
}

// clearFleet deletes the Guards of a run and the objects they applied in
// ns, and waits until the Guards are gone. Without a controller manager the
// namespace would never finish deleting, so its objects go one kind at a
// time (Services have no delete-collection).
func clearFleet(ctx context.Context, admin client.Client, kube kubernetes.Interface, ns string) error {
	if err := admin.DeleteAllOf(ctx, &v1alpha1.Guard{}); err != nil {
		return fmt.Errorf("delete the Guards of %s: %w", ns, err)
	}
	for _, obj := range []client.Object{&appsv1.Deployment{}, &corev1.ServiceAccount{}, &networkingv1.Ingress{}} {
		if err := admin.DeleteAllOf(ctx, obj, client.InNamespace(ns)); err != nil {
			return fmt.Errorf("delete the %T objects of %s: %w", obj, ns, err)
		}
	}
	svcs, err := kube.CoreV1().Services(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return fmt.Errorf("list the Services of %s: %w", ns, err)
	}
	var eg errgroup.Group
	eg.SetLimit(16)
	for _, s := range svcs.Items {
		eg.Go(func() error {
			if err := kube.CoreV1().Services(ns).Delete(ctx, s.Name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
				return fmt.Errorf("delete Service %s/%s: %w", ns, s.Name, err)
			}
			return nil
		})
	}
	if err := eg.Wait(); err != nil {
		return err
	}
	for deadline := time.Now().Add(2 * time.Minute); ; time.Sleep(250 * time.Millisecond) {
		var list v1alpha1.GuardList
		if err := admin.List(ctx, &list); err != nil {
			return fmt.Errorf("list Guards: %w", err)
		}
		if len(list.Items) == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%d Guards still there 2 minutes after they were deleted", len(list.Items))
		}
	}
}

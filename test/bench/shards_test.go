package bench

import (
	"context"
	"flag"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/driftguard/driftguard/api/v1alpha1"
	"github.com/driftguard/driftguard/test/bench/report"
	"github.com/driftguard/driftguard/test/harness"
)

// shardNames are the two shards of BenchmarkShards.
var shardNames = []string{"a", "b"}

const shardsNS = "shards"

// shardFleet is BenchmarkShards' cluster: the plane, its Guards and the
// running guard process of each shard.
type shardFleet struct {
	p      *plane
	guards int
	procs  map[string]*harness.Process
	alice  kubernetes.Interface // an editor the guards do not allow
}

func (f *shardFleet) guardName(g int) string { return fmt.Sprintf("shard-g%04d", g) }
func (f *shardFleet) shardOf(g int) string   { return shardNames[g%len(shardNames)] }

// start starts shard s's guard process (again: same folder, log appended)
// and waits until it is healthy and its webhook configuration exists.
func (f *shardFleet) start(ctx context.Context, s string) error {
	g, err := harness.StartProcess(harness.ProcessOptions{Kubeconfig: f.p.guardKC, Dir: filepath.Join(f.p.dir, "shard-"+s), WebhookConfigName: "driftguard-" + s,
		Args: []string{"--shard=" + s, "--audit-events=false", "--audit-stdout=false", "--default-interval=10m"}})
	if err != nil {
		return err
	}
	f.procs[s] = g
	if err := g.WaitHealthy(60 * time.Second); err != nil {
		return fmt.Errorf("shard %s: %w", s, err)
	}
	return waitGone(60*time.Second, "missing webhook configurations", func() (int, error) {
		_, err := f.p.kube.AdmissionregistrationV1().ValidatingWebhookConfigurations().Get(ctx, "driftguard-"+s, metav1.GetOptions{})
		if err != nil {
			return 1, nil //nolint:nilerr // not there yet
		}
		return 0, nil
	})
}

// BenchmarkShards splits 1,000 Guards (100 with -quick) of Flux's fleet
// shape between two guard processes, --shard a and --shard b, each with
// its webhook registered under a name of its own, on a control plane of
// its own. Figures per shard: its Guards created → all Ready, its peak
// resident memory and API requests per Guard; the Guards reconciled by
// anyone but exactly their own shard (from each process's
// driftguard_sync_total per Guard); admission: an edit of a managed object
// of each shard with both up, then with only its own shard up, must be
// denied, and both processes answer the reviews.
//
// It runs only when -bench names it (-bench Shards).
func BenchmarkShards(b *testing.B) {
	if fl := flag.Lookup("test.bench"); fl == nil || !strings.Contains(fl.Value.String(), "Shards") {
		b.Skip("runs only when -bench names it (-bench Shards)")
	}
	ctx := context.Background()
	f := &shardFleet{p: startPlane(b, "shards", nil), guards: 1000, procs: map[string]*harness.Process{}}
	if *quick {
		f.guards = 100
	}
	defer func() {
		for _, g := range f.procs {
			_ = g.Stop()
		}
	}()
	if err := addServiceCIDR(ctx, f.p.kube, "bench-shards", "10.2.0.0/19"); err != nil {
		b.Fatal(err)
	}
	if err := f.p.createNamespaces(ctx, []string{shardsNS}); err != nil {
		b.Fatal(err)
	}
	_, aliceCfg, err := f.p.cluster.AddUser("alice", []string{"system:masters"})
	if err != nil {
		b.Fatal(err)
	}
	if f.alice, err = kubernetes.NewForConfig(aliceCfg); err != nil {
		b.Fatal(err)
	}
	rev, err := f.commit()
	if err != nil {
		b.Fatal(err)
	}
	for _, s := range shardNames {
		if err := f.start(ctx, s); err != nil {
			b.Fatal(err)
		}
	}
	b.ResetTimer()
	ready, requests, err := f.createAndWait(ctx, rev)
	if err != nil {
		b.Fatal(err)
	}
	wrong, err := f.reconciledByOthers()
	if err != nil {
		b.Fatal(err)
	}
	for _, s := range shardNames {
		_, hwm := f.procs[s].Mem()
		label := fmt.Sprintf("shards: shard %s (%d Guards)", s, f.guards/len(shardNames))
		figure(b, withNote(report.NewFigure(label+": created → all Ready", ready[s].Seconds(), "s", report.AtMost, fleetReadyGoal),
			fmt.Sprintf("%d Guards of 4 objects split by label between 2 guard processes, created at once; the goal is the one of 1,000 Guards on one guard; load %s", f.guards, loadAvg())))
		figure(b, withNote(report.NewFigure(label+": peak RSS", hwm, "MiB", report.AtMost, fleetRSSGoal), "VmHWM of this shard's process"))
		figure(b, withNote(report.NewFigure(label+": API requests per Guard, created → all Ready", requests[s]/float64(f.guards/len(shardNames)), "requests", report.AtMost, fleetAPIRequestsGoal),
			"this shard's rest_client_requests_total"))
	}
	figure(b, withNote(report.NewFigure("shards: Guards not reconciled by exactly their own shard", float64(wrong), "Guards", report.AtMost, 0),
		fmt.Sprintf("%d Guards; each process's driftguard_sync_total per Guard: none, both, or the other shard's", f.guards)))
	f.admission(b, ctx)
	b.StopTimer()
	b.ReportMetric(0, "ns/op")
}

// commit writes every Guard's folder apps/<guard> in one repository.
func (f *shardFleet) commit() (string, error) {
	repo, err := f.p.git.NewRepo("shards")
	if err != nil {
		return "", err
	}
	for g := range f.guards {
		if err := repo.WriteFile("apps/"+f.guardName(g)+"/app.yaml", fleetManifest(shardsNS, f.guardName(g), 0)); err != nil {
			return "", err
		}
	}
	return repo.CommitAndPush("every Guard")
}

// createAndWait creates every Guard at once, labelled with its shard, and
// returns per shard the time until its last Guard was Ready with rev and
// the requests its process made meanwhile.
func (f *shardFleet) createAndWait(ctx context.Context, rev string) (map[string]time.Duration, map[string]float64, error) {
	before := map[string]float64{}
	for s, g := range f.procs {
		before[s], _ = g.Metric("rest_client_requests_total")
	}
	idx := make([]int, f.guards)
	for g := range idx {
		idx[g] = g
	}
	created := time.Now()
	if err := forEach(idx, func(g int) error {
		return f.p.admin.Create(ctx, &v1alpha1.Guard{
			ObjectMeta: metav1.ObjectMeta{Name: f.guardName(g), Labels: map[string]string{v1alpha1.ShardLabel: f.shardOf(g)}},
			Spec: v1alpha1.GuardSpec{Git: &v1alpha1.GitSource{URL: f.p.gitURL + "/shards.git", Ref: "main", Path: "apps/" + f.guardName(g)},
				Interval: metav1.Duration{Duration: 10 * time.Minute}},
		})
	}); err != nil {
		return nil, nil, err
	}
	ready, requests := map[string]time.Duration{}, map[string]float64{}
	for deadline := created.Add(15 * time.Minute); len(ready) < len(shardNames); time.Sleep(250 * time.Millisecond) {
		for s, g := range f.procs {
			if done, err := g.Exited(); done {
				return nil, nil, fmt.Errorf("shard %s exited: %w (log %s)", s, err, g.LogPath)
			}
		}
		var list v1alpha1.GuardList
		if err := f.p.admin.List(ctx, &list); err != nil {
			return nil, nil, err
		}
		count := map[string]int{}
		for _, g := range list.Items {
			if meta.IsStatusConditionTrue(g.Status.Conditions, v1alpha1.ConditionReady) && g.Status.LastAppliedRevision == rev && g.Status.ManagedObjects == fleetObjects {
				count[g.Labels[v1alpha1.ShardLabel]]++
			}
		}
		for _, s := range shardNames {
			if _, done := ready[s]; !done && count[s] == f.guards/len(shardNames) {
				ready[s] = time.Since(created)
				after, _ := f.procs[s].Metric("rest_client_requests_total")
				requests[s] = after - before[s]
			}
		}
		if time.Now().After(deadline) {
			return nil, nil, fmt.Errorf("Guards Ready per shard after 15 minutes: %v of %d each", count, f.guards/len(shardNames))
		}
	}
	return ready, requests, nil
}

// reconciledByOthers counts the Guards that were not reconciled by exactly
// their own shard, from each process's driftguard_sync_total per Guard.
func (f *shardFleet) reconciledByOthers() (int, error) {
	by := map[string]map[string]float64{}
	for s, g := range f.procs {
		m, err := guardMetricByLabel(g, "driftguard_sync_total", "guard")
		if err != nil {
			return 0, err
		}
		by[s] = m
	}
	wrong := 0
	for g := range f.guards {
		var who []string
		for _, s := range shardNames {
			if by[s][f.guardName(g)] > 0 {
				who = append(who, s)
			}
		}
		if len(who) != 1 || who[0] != f.shardOf(g) {
			wrong++
		}
	}
	return wrong, nil
}

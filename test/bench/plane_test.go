package bench

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sync/errgroup"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/driftguard/driftguard/app"
	"github.com/driftguard/driftguard/config"
	"github.com/driftguard/driftguard/devenv"
	"github.com/driftguard/driftguard/gitserver"
	"github.com/driftguard/driftguard/test/harness"
)

// plane is what a benchmark that starts guard processes of its own runs
// them against: a control plane, a Git server behind a counting front, an
// admin client and the guard's kubeconfig (system:masters).
type plane struct {
	dir         string
	cluster     *devenv.Cluster
	git         *gitserver.Server
	gitURL      string // the counting front: http://127.0.0.1:PORT
	gitRequests *atomic.Int64
	admin       client.Client
	kube        kubernetes.Interface
	guardKC     string
}

// startPlane starts a plane for benchmark name, with more flags for etcd
// (name without dashes to value); b.Cleanup stops it and removes its
// folder unless DRIFTGUARD_KEEP_BENCH is set.
func startPlane(b *testing.B, name string, etcdFlags map[string]string) *plane {
	b.Helper()
	if missing := devenv.MissingBinaries("", false); len(missing) > 0 {
		b.Skipf("control-plane binaries missing in %s: %v (run tools/build.sh, set KUBEBUILDER_ASSETS)", devenv.DefaultBinDir(), missing)
	}
	dir, err := os.MkdirTemp("", "driftguard-bench-"+name+"-")
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		if os.Getenv("DRIFTGUARD_KEEP_BENCH") == "" {
			_ = os.RemoveAll(dir)
		} else {
			b.Logf("kept %s", dir)
		}
	})
	crds := filepath.Join(dir, "crds")
	if err := config.WriteCRDs(crds); err != nil {
		b.Fatal(err)
	}
	p := &plane{dir: dir}
	p.cluster, err = devenv.Start(context.Background(), devenv.Options{CRDDirs: []string{crds}, Dir: filepath.Join(dir, "cluster"),
		EtcdFlags: etcdFlags, Log: zap.New(zap.WriteTo(logWriterFor(dir)))})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = p.cluster.Stop() })
	if p.git, err = gitserver.Start(filepath.Join(dir, "git")); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = p.git.Close() })
	front, requests := countingGitFront(b, p.git)
	b.Cleanup(func() { _ = front.Close() })
	p.gitURL, p.gitRequests = "http://"+front.Addr().String(), requests
	adminCfg := fastConfig(p.cluster.Config)
	if p.admin, err = client.New(adminCfg, client.Options{Scheme: app.Scheme()}); err != nil {
		b.Fatal(err)
	}
	if p.kube, err = kubernetes.NewForConfig(adminCfg); err != nil {
		b.Fatal(err)
	}
	if p.guardKC, _, err = p.cluster.AddUser("driftguard", []string{"system:masters"}); err != nil {
		b.Fatal(err)
	}
	return p
}

// createNamespaces creates the namespaces names, 16 at a time.
func (p *plane) createNamespaces(ctx context.Context, names []string) error {
	return forEach(names, func(ns string) error {
		if err := p.admin.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
			return fmt.Errorf("create namespace %s: %w", ns, err)
		}
		return nil
	})
}

// forEach calls f for every item, 16 at a time, and returns the first error.
func forEach[T any](items []T, f func(T) error) error {
	var eg errgroup.Group
	eg.SetLimit(16)
	for _, it := range items {
		eg.Go(func() error { return f(it) })
	}
	return eg.Wait()
}

// countObjects counts the ConfigMaps, Secrets, Services and Deployments in
// the cluster, the benchmark's and any others (the guard's inventories),
// one list of one item per kind (the API server's remainingItemCount).
func (p *plane) countObjects(ctx context.Context) (int, error) {
	one := metav1.ListOptions{Limit: 1}
	total := 0
	add := func(items int, lm metav1.ListMeta) {
		total += items
		if lm.RemainingItemCount != nil {
			total += int(*lm.RemainingItemCount)
		}
	}
	cms, err := p.kube.CoreV1().ConfigMaps("").List(ctx, one)
	if err != nil {
		return 0, fmt.Errorf("count ConfigMaps: %w", err)
	}
	add(len(cms.Items), cms.ListMeta)
	secrets, err := p.kube.CoreV1().Secrets("").List(ctx, one)
	if err != nil {
		return 0, fmt.Errorf("count Secrets: %w", err)
	}
	add(len(secrets.Items), secrets.ListMeta)
	svcs, err := p.kube.CoreV1().Services("").List(ctx, one)
	if err != nil {
		return 0, fmt.Errorf("count Services: %w", err)
	}
	add(len(svcs.Items), svcs.ListMeta)
	deps, err := p.kube.AppsV1().Deployments("").List(ctx, one)
	if err != nil {
		return 0, fmt.Errorf("count Deployments: %w", err)
	}
	add(len(deps.Items), deps.ListMeta)
	return total, nil
}

// controlPlaneMem is the resident memory of kube-apiserver and etcd, MiB
// (0 for a process that is gone or unknown).
func (p *plane) controlPlaneMem() (apiserver, etcd float64) {
	etcdPID, apiPID := p.cluster.ControlPlanePIDs()
	if apiPID > 0 {
		apiserver, _ = harness.ProcMem(apiPID)
	}
	if etcdPID > 0 {
		etcd, _ = harness.ProcMem(etcdPID)
	}
	return apiserver, etcd
}

// etcdSize reads etcd's database size and its backend quota, in bytes, from
// etcd's own /metrics.
func (p *plane) etcdSize(ctx context.Context) (db, quota float64, err error) {
	url := p.cluster.EtcdURL()
	if url == "" {
		return 0, 0, fmt.Errorf("etcd's address is unknown")
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimSuffix(url, "/")+"/metrics", nil)
	if err != nil {
		return 0, 0, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, 0, fmt.Errorf("etcd metrics: %w", err)
	}
	defer resp.Body.Close()
	m, err := promValues(resp.Body, "etcd_mvcc_db_total_size_in_bytes", "etcd_server_quota_backend_bytes")
	if err != nil {
		return 0, 0, fmt.Errorf("etcd metrics: %w", err)
	}
	return m["etcd_mvcc_db_total_size_in_bytes"], m["etcd_server_quota_backend_bytes"], nil
}

// promValues sums the samples of each named metric in a Prometheus text
// exposition.
func promValues(r io.Reader, names ...string) (map[string]float64, error) {
	out := map[string]float64{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 1<<16), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		for _, n := range names {
			rest, ok := strings.CutPrefix(line, n)
			if !ok || rest == "" || (rest[0] != ' ' && rest[0] != '{') {
				continue
			}
			fields := strings.Fields(rest[strings.LastIndex(rest, "}")+1:])
			if len(fields) == 0 {
				continue
			}
			if v, err := strconv.ParseFloat(fields[0], 64); err == nil {
				out[n] += v
			}
		}
	}
	return out, sc.Err()
}

// guardMetricByLabel scrapes a guard process's metric name and sums its
// samples per value of label ("guard": per Guard).
func guardMetricByLabel(g *harness.Process, name, label string) (map[string]float64, error) {
	resp, err := http.Get("http://" + g.MetricsAddr + "/metrics")
	if err != nil {
		return nil, fmt.Errorf("scrape guard metrics: %w", err)
	}
	defer resp.Body.Close()
	out := map[string]float64{}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 0, 1<<16), 1<<20)
	for sc.Scan() {
		labels, ok := strings.CutPrefix(sc.Text(), name+"{")
		if !ok {
			continue
		}
		labels, value, ok := strings.Cut(labels, "} ")
		if !ok {
			continue
		}
		if v, err := strconv.ParseFloat(strings.TrimSpace(value), 64); err == nil {
			out[metricLabel(labels, label)] += v
		}
	}
	return out, sc.Err()
}

// waitGone waits until count reports nothing left, at most timeout.
func waitGone(timeout time.Duration, what string, count func() (int, error)) error {
	for deadline := time.Now().Add(timeout); ; time.Sleep(250 * time.Millisecond) {
		n, err := count()
		if err != nil {
			return err
		}
		if n == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%d %s still there after %s", n, what, timeout)
		}
	}
}

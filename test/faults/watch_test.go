package faults

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/driftguard/driftguard/audit"
	"github.com/driftguard/driftguard/test/wait"
)

// TestWatchExpiredRelist: the guard reaches the API server through a TCP
// proxy, which is cut. While the guard is cut off, kube-apiserver restarts
// (so its watch cache, and every resourceVersion from before, is gone) and
// ConfigMaps are edited and deleted. When the proxy is back, the guard's
// watches resume from a resourceVersion that expired (410 Gone, "too old
// resource version"), so its informers list again; every change made in the
// gap is found by that relist, reverted or recreated, and recorded.
func TestWatchExpiredRelist(t *testing.T) {
	const ns, name, n = "fault-watch", "fault-watch", 50
	namespace(t, ns)
	_, rev := newRepo(t, name, cmFiles(ns, n, 25, gitValues))
	server := strings.TrimSuffix(cluster.Config.Host, "/")
	proxy := newProxy(t, strings.TrimPrefix(server, "https://"))
	g := startGuardAs(t, kubeconfigVia(t, guardKubeconfig, server, proxy), "--webhook-register=false")
	createGuard(t, name)
	waitApplied(t, g, name, rev, n, 60*time.Second)

	// The newest resourceVersion before the restart: the guard's watches
	// resume from it or from an older one.
	before, err := kube.CoreV1().ConfigMaps(ns).List(context.Background(), metav1.ListOptions{Limit: 1})
	if err != nil {
		t.Fatal(err)
	}
	proxy.cut()
	if err := cluster.StopAPIServer(); err != nil {
		t.Fatal(err)
	}
	if err := cluster.StartAPIServer(context.Background()); err != nil {
		t.Fatal(err)
	}
	// The gap: edit 10 ConfigMaps and delete 5, by name (no list).
	ctx := context.Background()
	var tokens []string
	for i := range 10 {
		tok := fmt.Sprintf("in-the-gap-%02d", i)
		tokens = append(tokens, tok)
		if err := patchValue(kube, ns, cmName(i), tok); err != nil {
			t.Fatal(err)
		}
	}
	deleted := []string{cmName(20), cmName(21), cmName(22), cmName(23), cmName(24)}
	for _, d := range deleted {
		if err := kube.CoreV1().ConfigMaps(ns).Delete(ctx, d, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if err := proxy.restore(); err != nil {
		t.Fatal(err)
	}
	// The guard lists ConfigMaps again: its watch expired. Nobody else
	// lists them on the restarted API server (this test reads by name
	// until here), so a list there is the guard's relist: a LIST request,
	// or a streaming watch list (client-go's WatchListClient, on by
	// default), which the API server counts apart.
	wait.Eventually(t, 60*time.Second, "the guard relists ConfigMaps", func() error {
		g.alive()
		lists, err := apiMetric(ctx, "apiserver_request_total", `verb="LIST"`, `resource="configmaps"`)
		if err != nil {
			return err
		}
		streams, err := apiMetric(ctx, "apiserver_watch_list_duration_seconds_count", `resource="configmaps"`)
		if err != nil {
			return err
		}
		if lists+streams == 0 {
			return fmt.Errorf("no list of ConfigMaps on the restarted API server")
		}
		t.Logf("relist on the restarted API server: %v LIST, %v watch list requests", lists, streams)
		return nil
	})
	// The fault is real: a watch from before the restart has expired.
	w, err := kube.CoreV1().ConfigMaps(ns).Watch(ctx, metav1.ListOptions{ResourceVersion: before.ResourceVersion})
	if err != nil {
		t.Fatal(err)
	}
	select {
	case ev := <-w.ResultChan():
		st, ok := ev.Object.(*metav1.Status)
		if ev.Type != watch.Error || !ok || st.Code != http.StatusGone {
			t.Fatalf("a watch from resourceVersion %s after the restart: %s %+v, want 410 Gone", before.ResourceVersion, ev.Type, ev.Object)
		}
		t.Logf("watch from resourceVersion %s: %d %s", before.ResourceVersion, st.Code, st.Message)
	case <-time.After(10 * time.Second):
		t.Fatalf("a watch from resourceVersion %s after the restart did not expire", before.ResourceVersion)
	}
	w.Stop()
	wait.Eventually(t, 60*time.Second, "every ConfigMap as in Git", func() error {
		g.alive()
		return sameAsGit(ns, wantValues(n, gitValues))
	})
	wait.Eventually(t, 30*time.Second, "every change in the gap recorded", func() error {
		recs := g.records()
		drifts, reverts := byToken(recs, audit.Drift), byToken(recs, audit.Revert)
		for _, tok := range tokens {
			if len(drifts[tok]) == 0 || len(reverts[tok]) == 0 {
				return fmt.Errorf("%s: %d drift, %d revert records", tok, len(drifts[tok]), len(reverts[tok]))
			}
		}
		recreated := map[string]bool{}
		for _, r := range recs {
			if r.Type == audit.Recreate && r.Object.Namespace == ns {
				recreated[r.Object.Name] = true
			}
		}
		for _, d := range deleted {
			if !recreated[d] {
				return fmt.Errorf("no recreate record for %s", d)
			}
		}
		return nil
	})
	waitSameRecords(t, g, 0)
}

// apiMetric returns the sum of the API server's samples of metric whose
// labels contain every one of labels.
func apiMetric(ctx context.Context, metric string, labels ...string) (float64, error) {
	raw, err := kube.CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
	if err != nil {
		return 0, err
	}
	sum := 0.0
	sc := bufio.NewScanner(bytes.NewReader(raw))
	sc.Buffer(make([]byte, 0, 1<<16), 1<<20)
	for sc.Scan() {
		rest, ok := strings.CutPrefix(sc.Text(), metric+"{")
		if !ok {
			continue
		}
		lbl, value, ok := strings.Cut(rest, "} ")
		if !ok {
			continue
		}
		match := true
		for _, l := range labels {
			match = match && strings.Contains(lbl, l)
		}
		if v, err := strconv.ParseFloat(strings.TrimSpace(value), 64); err == nil && match {
			sum += v
		}
	}
	return sum, sc.Err()
}

package bench

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"

	"github.com/driftguard/driftguard/gitserver"
	"github.com/driftguard/driftguard/source"
	"github.com/driftguard/driftguard/test/bench/report"
)

// BenchmarkGitNoopFetch: source.GitFetcher.Fetch of a remote that has not
// changed since the last fetch (a repository of 1,000 ConfigMaps in 40
// files on the loopback Git server), which must cost one reference listing
// and no fetch; side by side with `git ls-remote` of the same URL, the
// cheapest a command-line client can ask the same question.
func BenchmarkGitNoopFetch(b *testing.B) {
	dir := b.TempDir()
	git, err := gitserver.Start(filepath.Join(dir, "git"))
	if err != nil {
		b.Fatal(err)
	}
	defer func() { _ = git.Close() }()
	repo, err := git.NewRepo("noop")
	if err != nil {
		b.Fatal(err)
	}
	for f := range 40 {
		var docs []string
		for i := f * 25; i < (f+1)*25; i++ {
			docs = append(docs, cmDoc(cmName(i), "noop", gitValue))
		}
		if err := repo.WriteFile(fmt.Sprintf("cms-%02d.yaml", f), strings.Join(docs, "---\n")); err != nil {
			b.Fatal(err)
		}
	}
	rev, err := repo.CommitAndPush("1000 ConfigMaps")
	if err != nil {
		b.Fatal(err)
	}
	// A counting front, as the guard would see the server.
	var mu sync.Mutex
	requests := map[string]int{}
	front, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	defer front.Close()
	handler := git.Handler()
	go func() {
		_ = http.Serve(front, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			mu.Lock()
			requests[r.Method+" "+r.URL.Path[strings.LastIndex(r.URL.Path, "/")+1:]]++
			mu.Unlock()
			handler.ServeHTTP(w, r)
		}))
	}()
	url := "http://" + front.Addr().String() + "/noop.git"

	ctx := context.Background()
	f := source.NewGitFetcher(filepath.Join(dir, "cache"), logr.Discard())
	req := source.Request{URL: url, Ref: "main"}
	if got, snap, err := f.Fetch(ctx, req); err != nil || got != rev || len(snap.Objects) != 1000 {
		b.Fatalf("first fetch: %s %v (%v objects)", got, err, snap)
	}
	fetches, lsRemotes := 100, 30
	if *quick {
		fetches, lsRemotes = 30, 10
	}
	mu.Lock()
	clear(requests)
	mu.Unlock()
	var noop []time.Duration
	b.ResetTimer()
	for range fetches {
		t0 := time.Now()
		got, _, err := f.Fetch(ctx, req)
		noop = append(noop, time.Since(t0))
		if err != nil || got != rev {
			b.Fatalf("no-op fetch: %s %v", got, err)
		}
	}
	b.StopTimer()
	mu.Lock()
	counted := make(map[string]int, len(requests))
	total := 0
	for k, v := range requests {
		counted[k] = v
		total += v
	}
	mu.Unlock()
	// Baseline: git ls-remote of the same ref, the system git, with an
	// empty configuration.
	var ls []time.Duration
	for range lsRemotes {
		cmd := exec.Command("git", "ls-remote", url, "refs/heads/main")
		cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "HOME="+dir)
		t0 := time.Now()
		out, err := cmd.Output()
		ls = append(ls, time.Since(t0))
		if err != nil || !strings.HasPrefix(string(out), rev) {
			b.Fatalf("git ls-remote: %v %q", err, out)
		}
	}
	p50, base := quantile(noop, .5), quantile(ls, .5)
	var reqRows []string
	for k, v := range counted {
		reqRows = append(reqRows, fmt.Sprintf("%s ×%d", k, v))
	}
	printTable(fmt.Sprintf("BenchmarkGitNoopFetch: %d fetches of an unchanged remote (1,000 objects, 40 files) vs %d × git ls-remote", fetches, lsRemotes),
		[]string{"figure", "value"}, [][]string{
			{"no-op Fetch p50 / p99 / max (ms)", fmt.Sprintf("%s / %s / %s", fmtMS(p50), fmtMS(quantile(noop, .99)), fmtMS(quantile(noop, 1)))},
			{"git ls-remote p50 / p99 (ms)", fmt.Sprintf("%s / %s", fmtMS(base), fmtMS(quantile(ls, .99)))},
			{"requests to the Git server during the fetches", strings.Join(reqRows, ", ")},
		})
	b.ReportMetric(0, "ns/op")
	b.ReportMetric(ms(p50), "noop-fetch-p50-ms")
	b.ReportMetric(ms(base), "ls-remote-p50-ms")
	note := fmt.Sprintf("%d no-op fetches; requests: %s", fetches, strings.Join(reqRows, ", "))
	figure(b, withNote(report.NewFigure("git_noop_fetch_p50", ms(p50), "ms", report.AtMost, ms(base)).WithBaseline(ms(base), "ms"), note+"; baseline: git ls-remote p50"))
	figure(b, withNote(report.NewFigure("git_noop_fetch_requests", float64(total)/float64(fetches), "requests/fetch", report.AtMost, 1), note))
	figure(b, withNote(report.NewFigure("git_noop_fetch_upload_packs", float64(counted["POST git-upload-pack"]), "fetches", report.AtMost, 0), note))
}

package bench

import (
	"context"
	"fmt"
	"io/fs"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"

	"github.com/driftguard/driftguard/gitserver"
	"github.com/driftguard/driftguard/source"
	"github.com/driftguard/driftguard/test/bench/report"
)

// BenchmarkGitCacheSize: a Guard follows a branch of the loopback Git
// server through 1,000 pushes (200 with -quick), each changing one of 40
// files of 1,000 ConfigMaps, and source.GitFetcher fetches every one with
// the guard's default options. The figure is the size of the repository's
// cache after the last fetch; the target, the bound --git-cache-max-packs
// sets: that many times the most one fetch added to the cache (each fetch
// brings the whole tree, a little larger as the values grow). The baseline
// is what the cache would hold without the bound: every pack fetched.
func BenchmarkGitCacheSize(b *testing.B) {
	commits := 1000
	if *quick {
		commits = 200
	}
	dir := b.TempDir()
	git, err := gitserver.Start(filepath.Join(dir, "git"))
	if err != nil {
		b.Fatal(err)
	}
	defer func() { _ = git.Close() }()
	repo, err := git.NewRepo("cache")
	if err != nil {
		b.Fatal(err)
	}
	file := func(f, commit int) string {
		var docs []string
		for i := f * 25; i < (f+1)*25; i++ {
			docs = append(docs, cmDoc(cmName(i), "cache", fmt.Sprintf("%s-%d", gitValue, commit)))
		}
		return strings.Join(docs, "---\n")
	}
	for f := range 40 {
		if err := repo.WriteFile(fmt.Sprintf("cms-%02d.yaml", f), file(f, 0)); err != nil {
			b.Fatal(err)
		}
	}
	cacheDir := filepath.Join(dir, "cache")
	f := source.NewGitFetcher(cacheDir, logr.Discard())
	f.SetOptions(source.DefaultFetchOptions())
	req := source.Request{URL: git.URL("cache"), Ref: "main"}
	ctx := context.Background()

	var (
		size, first, most, unbounded, largest int64
		fetchTimes                            []time.Duration
	)
	began := time.Now()
	b.ResetTimer()
	for c := range commits {
		if c > 0 {
			if err := repo.WriteFile(fmt.Sprintf("cms-%02d.yaml", c%40), file(c%40, c)); err != nil {
				b.Fatal(err)
			}
		}
		rev, err := repo.CommitAndPush(fmt.Sprintf("commit %d", c))
		if err != nil {
			b.Fatal(err)
		}
		before := size
		t0 := time.Now()
		got, snap, err := f.Fetch(ctx, req)
		fetchTimes = append(fetchTimes, time.Since(t0))
		if err != nil || got != rev || len(snap.Objects) != 1000 {
			b.Fatalf("fetch of commit %d: %s %v", c, got, err)
		}
		size = treeSize(cacheDir)
		// What this fetch added; after the cache was emptied, all of it.
		added := size
		if size > before {
			added = size - before
		}
		unbounded += added
		largest = max(largest, added)
		most = max(most, size)
		if c == 0 {
			first = size
		}
	}
	b.StopTimer()
	took := time.Since(began)
	kib := func(n int64) float64 { return float64(n) / 1024 }
	printTable(fmt.Sprintf("BenchmarkGitCacheSize: %d commits to one repository (1,000 ConfigMaps in 40 files, one file changed a commit), each fetched, --%s=%d",
		commits, source.FlagGitCacheMaxPacks, source.DefaultMaxCachePacks),
		[]string{"figure", "value"}, [][]string{
			{fmt.Sprintf("cache after %d commits (KiB)", commits), fmt.Sprintf("%.0f", kib(size))},
			{"after the first fetch / the most over all (KiB)", fmt.Sprintf("%.0f / %.0f", kib(first), kib(most))},
			{"the most one fetch added (KiB)", fmt.Sprintf("%.1f", kib(largest))},
			{"without the bound: every pack fetched (KiB)", fmt.Sprintf("%.0f", kib(unbounded))},
			{"fetch p50 / p99 (ms)", fmt.Sprintf("%s / %s", fmtMS(quantile(fetchTimes, .5)), fmtMS(quantile(fetchTimes, .99)))},
			{"commits, pushes and fetches took", took.Round(time.Second).String()},
		})
	b.ReportMetric(0, "ns/op")
	b.ReportMetric(kib(size), "cache-KiB")
	bound := float64(source.DefaultMaxCachePacks) * kib(largest)
	note := fmt.Sprintf("%d commits fetched one by one; target: --%s (%d) × the most one fetch added (%.1f KiB); baseline: every pack fetched, kept (no bound)",
		commits, source.FlagGitCacheMaxPacks, source.DefaultMaxCachePacks, kib(largest))
	figure(b, withNote(report.NewFigure(fmt.Sprintf("git_cache_after_%d_commits", commits), kib(size), "KiB", report.AtMost, bound).WithBaseline(kib(unbounded), "KiB"), note))
}

// treeSize returns the bytes of the files below dir.
func treeSize(dir string) int64 {
	var n int64
	_ = filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil //nolint:nilerr // gone while walking: not counted
		}
		if info, err := d.Info(); err == nil && info.Mode().IsRegular() {
			n += info.Size()
		}
		return nil
	})
	return n
}

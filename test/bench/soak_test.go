package bench

import (
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/driftguard/driftguard/audit"
	"github.com/driftguard/driftguard/test/bench/report"
)

var soakDuration = flag.Duration("soak", 10*time.Minute, "how long BenchmarkSoak edits (make soak)")

// soakWarmup is the part of a soak run after which memory must not grow.
const soakWarmup = 2 * time.Minute

// soakHeapSlack is how much the guard's heap after GC may grow from the end
// of the warm-up to the end of the run.
const soakHeapSlack = 10 // MiB

// BenchmarkSoak: the self-heal fixture (1,000 ConfigMaps, webhook off) under
// 100 edits/s for -soak (10 minutes), each 10 s a random permutation of the
// objects. Every minute it prints the minute's latencies, the edits not
// reverted, and the guard's RSS, heap after GC and goroutines. It runs only
// when -bench names it (make soak). With DRIFTGUARD_KEEP_BENCH=1 it keeps a
// heap profile of the guard per minute in the environment's folder.
func BenchmarkSoak(b *testing.B) {
	if f := flag.Lookup("test.bench"); f == nil || !strings.Contains(f.Value.String(), "Soak") {
		b.Skip("runs only when -bench names it (make soak)")
	}
	fx := healSetup(b)
	e := fx.env
	objects := healSizes().objects
	minutes := int(soakDuration.Minutes())
	if minutes < 1 {
		minutes = 1
	}
	type row struct {
		minute                int
		edits, notBack        int
		d50, d99, r50, r99    time.Duration
		rss, heap, goroutines float64
		load                  string
	}
	var rows []row
	header := []string{"minute", "edits", "detect p50 ms", "detect p99 ms", "revert p50 ms", "revert p99 ms", "not reverted", "RSS MiB", "heap MiB", "goroutines", "load"}
	fmt.Printf("\n== BenchmarkSoak: 100 edits/s over %d ConfigMaps for %d minutes, webhook off\n%s\n", objects, minutes, strings.Join(header, " | "))
	b.ResetTimer()
	for m := 1; m <= minutes; m++ {
		from := e.audit.len()
		var edits []edit
		for chunk := range 6 {
			var targets []int
			for len(targets) < 1000 { // 10 s at 100/s, each object once per permutation
				targets = append(targets, rand.Perm(objects)...)
			}
			targets = targets[:1000]
			edits = append(edits, load(fx.alice, healNS, fmt.Sprintf("soak-%02d-%d", m, chunk), targets, 100, 32, 10*time.Second)...)
		}
		waitReverted(edits, fx.watch)
		waitAudit(e.audit, from, lastTokens(edits), []audit.Type{audit.Drift, audit.Revert}, time.Second, 10*time.Second)
		recs, _ := e.audit.since(from)
		o := analyze(edits, fx.watch, recs)
		rss, _ := e.guard.Mem()
		heap := guardHeap(b, e)
		if os.Getenv("DRIFTGUARD_KEEP_BENCH") != "" {
			// For `go tool pprof -base heap-02.pprof heap-10.pprof`.
			if err := e.guard.SaveHeapProfile(filepath.Join(e.dir, fmt.Sprintf("heap-%02d.pprof", m))); err != nil {
				b.Log(err)
			}
		}
		gr, _ := e.guard.Metric("go_goroutines")
		r := row{minute: m, edits: len(edits), notBack: o.unreverted + o.failed,
			d50: quantile(o.detect, .5), d99: quantile(o.detect, .99), r50: quantile(o.revert, .5), r99: quantile(o.revert, .99),
			rss: rss, heap: heap, goroutines: gr, load: loadAvg()}
		rows = append(rows, r)
		fmt.Printf("%d | %d | %s | %s | %s | %s | %d | %.1f | %.1f | %.0f | %s\n", r.minute, r.edits, fmtMS(r.d50), fmtMS(r.d99), fmtMS(r.r50), fmtMS(r.r99),
			r.notBack, r.rss, r.heap, r.goroutines, r.load)
	}
	b.StopTimer()
	var table [][]string
	notBack, worstRevert := 0, time.Duration(0)
	for _, r := range rows {
		table = append(table, []string{fmt.Sprint(r.minute), fmt.Sprint(r.edits), fmtMS(r.d50), fmtMS(r.d99), fmtMS(r.r50), fmtMS(r.r99),
			fmt.Sprint(r.notBack), fmt.Sprintf("%.1f", r.rss), fmt.Sprintf("%.1f", r.heap), fmt.Sprintf("%.0f", r.goroutines), r.load})
		notBack += r.notBack
		worstRevert = max(worstRevert, r.r99)
	}
	printTable(fmt.Sprintf("BenchmarkSoak: 100 edits/s over %d ConfigMaps, per minute", objects), header, table)
	warm := rows[min(int(soakWarmup.Minutes()), len(rows))-1]
	last := rows[len(rows)-1]
	note := fmt.Sprintf("%d minutes at 100 edits/s over %d objects; warm-up %s", minutes, objects, soakWarmup)
	figure(b, withNote(report.NewFigure("soak_heap_after_warmup", last.heap, "MiB", report.AtMost, warm.heap+soakHeapSlack).WithBaseline(warm.heap, "MiB"), note+"; baseline: heap after GC at the end of the warm-up"))
	figure(b, withNote(report.NewFigure("soak_goroutines_after_warmup", last.goroutines, "goroutines", report.AtMost, warm.goroutines*1.1+10).WithBaseline(warm.goroutines, "goroutines"), note))
	figure(b, withNote(report.NewFigure("soak_revert_p99_worst_minute", ms(worstRevert), "ms", report.AtMost, 100), note))
	figure(b, withNote(report.NewFigure("soak_not_reverted_10s", float64(notBack), "edits", report.AtMost, 0), note))
	b.ReportMetric(0, "ns/op")
}

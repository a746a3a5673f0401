package bench

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"github.com/driftguard/driftguard/audit"
	"github.com/driftguard/driftguard/test/bench/report"
)

const (
	// How long to wait for audit records after the objects are back: until
	// none arrived for auditQuiet (longer than the Event sink's 2 s write
	// timeout and its retry), at most auditMax.
	auditQuiet = 8 * time.Second
	auditMax   = 45 * time.Second

	healNS    = "bench-heal"
	healGuard = "bench-heal"

	// The guard's heap after GC, 30 s after the burst, may exceed its heap
	// before the burst by this much and still count as back to baseline.
	burstHeapSlack = 10 // MiB
)

// healSize is the size of the self-heal benchmarks: objects managed, the
// sustained run (100 edits/s) and the burst (300 edits/s).
type healSize struct {
	objects  int
	duration time.Duration // of the sustained run
	burst    time.Duration // of the burst
	settle   time.Duration // from the burst's end to the heap reading
}

func healSizes() healSize {
	if *quick {
		return healSize{objects: 300, duration: 3 * time.Second, burst: 3 * time.Second, settle: 10 * time.Second}
	}
	return healSize{objects: 1000, duration: 10 * time.Second, burst: 10 * time.Second, settle: 30 * time.Second}
}

// healFixture is the webhook-off environment with one Guard of 1,000
// ConfigMaps, a load client as alice and our own informer; the self-heal
// benchmarks share it.
type healFixture struct {
	env   *env
	alice kubernetes.Interface
	watch *cmWatch
}

var heal struct {
	fx  *healFixture
	env *env
}

func healSetup(b *testing.B) *healFixture {
	b.Helper()
	e := guardEnv(b)
	if heal.env == e && heal.fx != nil {
		e.setAdmission(b, false, heal.fx.alice, healNS, cmName(0))
		return heal.fx
	}
	e.configMapGuard(b, healGuard, healNS, healSizes().objects, true)
	fx := &healFixture{env: e, alice: e.userClient(b, "alice", []string{"system:masters", "dev"})}
	// Webhook off: the API server calls no webhook, as with WebhookRegister=false.
	e.setAdmission(b, false, fx.alice, healNS, cmName(0))
	// Our informer lives as long as the environment, not one benchmark.
	w, err := watchConfigMaps(e.kube, healNS)
	if err != nil {
		b.Fatal(err)
	}
	fx.watch = w
	e.onStop = append(e.onStop, w.shutdown)
	// Warm up: one edit end to end proves the guard's informer is watching.
	warm := load(fx.alice, healNS, "warmup", []int{0}, 1, 1, time.Second)
	if warm[0].err != nil {
		b.Fatal(warm[0].err)
	}
	waitReverted(warm, fx.watch)
	if _, ok := fx.watch.gitAfter(cmName(0), warm[0].rv); !ok {
		b.Fatal("warm-up edit was not reverted within 10s; see guard.log in " + e.dir)
	}
	heal.env, heal.fx = e, fx
	return fx
}

// BenchmarkSelfHeal: 1,000 managed ConfigMaps, webhook off; alice patches a
// random one at 100 edits/s for 10 s (each object once, in random order);
// per edit, the time from the API response to the drift record and to the
// object back at Git's value.
func BenchmarkSelfHeal(b *testing.B) {
	fx := healSetup(b)
	size := healSizes()
	targets := rand.Perm(size.objects)[:int(100*size.duration.Seconds())]
	from := fx.env.audit.len()
	b.ResetTimer()
	edits := load(fx.alice, healNS, "heal", targets, 100, 32, size.duration)
	waitReverted(edits, fx.watch)
	waitAudit(fx.env.audit, from, lastTokens(edits), []audit.Type{audit.Drift, audit.Revert}, auditQuiet, auditMax)
	b.StopTimer()
	recs, _ := fx.env.audit.since(from)
	o := analyze(edits, fx.watch, recs)
	span := edits[len(edits)-1].sent.Sub(edits[0].sent)
	printOutcome(fmt.Sprintf("BenchmarkSelfHeal: %s%d edits of %d ConfigMaps at %.0f edits/s (target 100/s), webhook off",
		eventsNote(fx.env), len(edits), size.objects, float64(len(edits)-1)/span.Seconds()), o)
	reportOutcome(b, o)
	note := fmt.Sprintf("%d edits at 100/s over %d objects", len(edits), size.objects)
	figure(b, withNote(report.NewFigure("selfheal_detect_p99", nanOr(ms(quantile(o.detect, .99)), len(o.detect)), "ms", report.AtMost, 20), note))
	figure(b, withNote(report.NewFigure("selfheal_revert_p99", nanOr(ms(quantile(o.revert, .99)), len(o.revert)), "ms", report.AtMost, 100), note))
	figure(b, withNote(report.NewFigure("selfheal_not_reverted_10s", float64(o.unreverted+o.failed), "edits", report.AtMost, 0), note))
}

func withNote(f report.Figure, note string) report.Figure {
	f.Note = note
	return f
}

// nanOr returns v, or NaN (a failed figure) when it is a quantile of nothing.
func nanOr(v float64, n int) float64 {
	if n == 0 {
		return math.NaN()
	}
	return v
}

// BenchmarkSelfHealBurst: 3,000 edits at 300 edits/s (or as fast as the API
// server takes them) on the same 1,000 ConfigMaps; time from the burst's end
// until every edited object is back to Git, and the process heap.
func BenchmarkSelfHealBurst(b *testing.B) {
	fx := healSetup(b)
	size := healSizes()
	targets := make([]int, int(300*size.burst.Seconds()))
	for i := range targets {
		targets[i] = rand.IntN(size.objects)
	}
	heapBefore := guardHeap(b, fx.env)
	from := fx.env.audit.len()
	b.ResetTimer()
	edits := load(fx.alice, healNS, "burst", targets, 300, 96, 2*size.burst)
	var burstEnd time.Time
	for _, e := range edits {
		if e.resp.After(burstEnd) {
			burstEnd = e.resp
		}
	}
	heapEnd := guardHeap(b, fx.env)
	waitReverted(edits, fx.watch)
	// Every edited object: its last accepted edit, and when it was back.
	last := map[int]uint64{}
	for _, e := range edits {
		if e.err == nil && e.rv > last[e.obj] {
			last[e.obj] = e.rv
		}
	}
	var allBack time.Duration
	notBack := 0
	for obj, rv := range last {
		ev, ok := fx.watch.gitAfter(cmName(obj), rv)
		if !ok || ev.at.Sub(burstEnd) > revertWindow {
			notBack++
			continue
		}
		allBack = max(allBack, ev.at.Sub(burstEnd))
	}
	// The heap some time after the burst's end; then let the audit records drain.
	time.Sleep(time.Until(burstEnd.Add(size.settle)))
	heapAfter := guardHeap(b, fx.env)
	waitAudit(fx.env.audit, from, lastTokens(edits), []audit.Type{audit.Drift, audit.Revert}, auditQuiet, auditMax)
	b.StopTimer()
	recs, _ := fx.env.audit.since(from)
	o := analyze(edits, fx.watch, recs)

	span := edits[len(edits)-1].sent.Sub(edits[0].sent)
	rate := float64(len(edits)-1) / span.Seconds()
	printOutcome(fmt.Sprintf("BenchmarkSelfHealBurst: %s%d edits of %d ConfigMaps at %.0f edits/s (target 300/s) over %.1fs, webhook off",
		eventsNote(fx.env), len(edits), size.objects, rate, span.Seconds()), o)
	allBackText := fmtMS(allBack)
	if notBack > 0 {
		allBackText = fmt.Sprintf("> %s (%d objects not back)", fmtMS(revertWindow), notBack)
	}
	printTable("burst: recovery and the guard's heap (HeapInuse after a GC)", []string{"figure", "value"}, [][]string{
		{"edited objects", fmt.Sprint(len(last))},
		{"achieved edit rate (/s)", fmt.Sprintf("%.0f", rate)},
		{"burst end → every edited object back to Git (ms)", allBackText},
		{"objects not back within 10 s of the burst's end", fmt.Sprint(notBack)},
		{"heap before burst (MiB)", fmt.Sprintf("%.1f", heapBefore)},
		{"heap at burst end (MiB)", fmt.Sprintf("%.1f", heapEnd)},
		{fmt.Sprintf("heap %s after burst end (MiB)", size.settle), fmt.Sprintf("%.1f", heapAfter)},
	})
	reportOutcome(b, o)
	b.ReportMetric(rate, "edits/s")
	b.ReportMetric(ms(allBack), "all-back-ms")
	b.ReportMetric(float64(notBack), "objects-not-back-10s")
	b.ReportMetric(heapBefore, "heap-before-MiB")
	b.ReportMetric(heapEnd, "heap-end-MiB")
	b.ReportMetric(heapAfter, "heap-30s-MiB")
	note := fmt.Sprintf("%d edits at %.0f/s over %d objects", len(edits), rate, size.objects)
	allBackMS := ms(allBack)
	if notBack > 0 {
		allBackMS = math.NaN()
	}
	figure(b, withNote(report.NewFigure("burst_all_back_after_end", allBackMS, "ms", report.AtMost, ms(revertWindow)), note))
	figure(b, withNote(report.NewFigure("burst_duplicate_reverts", float64(atLeast(o.revertsPerState, 2)), "states", report.AtMost, 0), note))
	figure(b, withNote(report.NewFigure("burst_heap_after_settling", heapAfter, "MiB", report.AtMost, heapBefore+burstHeapSlack).WithBaseline(heapBefore, "MiB"), note))
}

// guardHeap is the guard's heap in use after a garbage collection, in MiB.
func guardHeap(b *testing.B, e *env) float64 {
	b.Helper()
	v, err := e.guard.HeapAfterGC()
	if err != nil {
		b.Fatal(err)
	}
	return v
}

func eventsNote(e *env) string {
	if e.auditEvents {
		return ""
	}
	return "[audit Events off] "
}

func printOutcome(title string, o outcome) {
	printTable(title, []string{"latency from the edit's API response", "n", "p50 ms", "p99 ms", "max ms"}, [][]string{
		latencyRow("detect: drift record (live=token) reaches audit writer", o.detect),
		latencyRow("detect: drift record's own time (before audit queue)", o.detectRec),
		latencyRow("revert: own informer sees Git's value again", o.revert),
		latencyRow("edit: alice's PATCH round trip", o.apiLatency),
	})
	printTable("edit outcomes", []string{"figure", "value"}, [][]string{
		{"edits accepted / failed", fmt.Sprintf("%d / %d", len(o.ok), o.failed)},
		{"NOT reverted within 10 s", fmt.Sprint(o.unreverted)},
		{"no drift record naming the state (see docs/performance.md)", fmt.Sprint(o.undetected)},
		{"superseded: next edit of the object landed before any revert", fmt.Sprint(o.superseded)},
		{"revert records per state  reverts:states", histogram(o.revertsPerState)},
		{"drift records per state   drifts:states", histogram(o.driftsPerState)},
		{"revert records per state, mean", fmt.Sprintf("%.3f", histMean(o.revertsPerState))},
		{"states with duplicate revert records (>1)", fmt.Sprint(atLeast(o.revertsPerState, 2))},
		{"ConfigMap apply records (full reconcile) meanwhile", fmt.Sprint(o.applyRecords)},
	})
}

func reportOutcome(b *testing.B, o outcome) {
	b.ReportMetric(0, "ns/op")
	reportLatency(b, "detect", o.detect)
	reportLatency(b, "revert", o.revert)
	b.ReportMetric(float64(len(o.ok)), "edits")
	b.ReportMetric(float64(o.unreverted), "not-reverted-10s")
	b.ReportMetric(float64(o.superseded), "superseded")
	b.ReportMetric(histMean(o.revertsPerState), "reverts/state")
	b.ReportMetric(float64(atLeast(o.revertsPerState, 2)), "dup-revert-states")
	b.ReportMetric(float64(o.applyRecords), "reconcile-applies")
}

func atLeast(h []int, n int) int {
	c := 0
	for k := n; k < len(h); k++ {
		c += h[k]
	}
	return c
}

// patchValue sets data.value of one ConfigMap and returns the round trip.
func patchValue(kube kubernetes.Interface, ns, name, value string) (time.Duration, error) {
	patch := fmt.Appendf(nil, `{"data":{"value":%q}}`, value)
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	start := time.Now()
	_, err := kube.CoreV1().ConfigMaps(ns).Patch(ctx, name, types.MergePatchType, patch, metav1.PatchOptions{FieldManager: "bench-patch"})
	return time.Since(start), err
}

package bench

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"github.com/driftguard/driftguard/audit"
)

const (
	// How long to wait for audit records after the objects are back: until
	// none arrived for auditQuiet (longer than the Event sink's 2 s write
	// timeout and its retry), at most auditMax.
	auditQuiet = 8 * time.Second
	auditMax   = 45 * time.Second

	healObjects = 1000
	healNS      = "bench-heal"
	healGuard   = "bench-heal"
)

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
		e.setAdmission(b, false, false, heal.fx.alice, healNS, cmName(0))
		return heal.fx
	}
	e.configMapGuard(b, healGuard, healNS, healObjects, true)
	fx := &healFixture{env: e, alice: e.userClient(b, "alice", []string{"system:masters", "dev"})}
	// Webhook off: the API server calls no webhook, as with WebhookRegister=false.
	e.setAdmission(b, false, false, fx.alice, healNS, cmName(0))
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
	targets := rand.Perm(healObjects)
	from := fx.env.audit.len()
	b.ResetTimer()
	edits := load(fx.alice, healNS, "heal", targets, 100, 32, 10*time.Second)
	waitReverted(edits, fx.watch)
	waitAudit(fx.env.audit, from, lastTokens(edits), []audit.Type{audit.Drift, audit.Revert}, auditQuiet, auditMax)
	b.StopTimer()
	recs, _ := fx.env.audit.since(from)
	o := analyze(edits, fx.watch, recs)
	span := edits[len(edits)-1].sent.Sub(edits[0].sent)
	printOutcome(fmt.Sprintf("BenchmarkSelfHeal: %s%d edits of %d ConfigMaps at %.0f edits/s (target 100/s), webhook off",
		eventsNote(fx.env), len(edits), healObjects, float64(len(edits)-1)/span.Seconds()), o)
	reportOutcome(b, o)
}

// BenchmarkSelfHealBurst: 3,000 edits at 300 edits/s (or as fast as the API
// server takes them) on the same 1,000 ConfigMaps; time from the burst's end
// until every edited object is back to Git, and the process heap.
func BenchmarkSelfHealBurst(b *testing.B) {
	fx := healSetup(b)
	targets := make([]int, 3000)
	for i := range targets {
		targets[i] = rand.IntN(healObjects)
	}
	heapBefore := heapInuse()
	from := fx.env.audit.len()
	b.ResetTimer()
	edits := load(fx.alice, healNS, "burst", targets, 300, 96, 20*time.Second)
	var burstEnd time.Time
	for _, e := range edits {
		if e.resp.After(burstEnd) {
			burstEnd = e.resp
		}
	}
	heapEnd := heapInuse()
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
	// Heap 30 s after the burst's end; then let the audit records drain.
	time.Sleep(time.Until(burstEnd.Add(30 * time.Second)))
	heapAfter := heapInuse()
	waitAudit(fx.env.audit, from, lastTokens(edits), []audit.Type{audit.Drift, audit.Revert}, auditQuiet, auditMax)
	b.StopTimer()
	recs, _ := fx.env.audit.since(from)
	o := analyze(edits, fx.watch, recs)

	span := edits[len(edits)-1].sent.Sub(edits[0].sent)
	rate := float64(len(edits)-1) / span.Seconds()
	printOutcome(fmt.Sprintf("BenchmarkSelfHealBurst: %s%d edits of %d ConfigMaps at %.0f edits/s (target 300/s) over %.1fs, webhook off",
		eventsNote(fx.env), len(edits), healObjects, rate, span.Seconds()), o)
	allBackText := fmtMS(allBack)
	if notBack > 0 {
		allBackText = fmt.Sprintf("> %s (%d objects not back)", fmtMS(revertWindow), notBack)
	}
	printTable("burst: recovery and heap (HeapInuse after runtime.GC, whole test process)", []string{"figure", "value"}, [][]string{
		{"edited objects", fmt.Sprint(len(last))},
		{"achieved edit rate (/s)", fmt.Sprintf("%.0f", rate)},
		{"burst end → every edited object back to Git (ms)", allBackText},
		{"objects not back within 10 s of the burst's end", fmt.Sprint(notBack)},
		{"heap before burst (MiB)", fmt.Sprintf("%.1f", heapBefore)},
		{"heap at burst end (MiB)", fmt.Sprintf("%.1f", heapEnd)},
		{"heap 30 s after burst end (MiB)", fmt.Sprintf("%.1f", heapAfter)},
	})
	reportOutcome(b, o)
	b.ReportMetric(rate, "edits/s")
	b.ReportMetric(ms(allBack), "all-back-ms")
	b.ReportMetric(float64(notBack), "objects-not-back-10s")
	b.ReportMetric(heapBefore, "heap-before-MiB")
	b.ReportMetric(heapEnd, "heap-end-MiB")
	b.ReportMetric(heapAfter, "heap-30s-MiB")
}

func eventsNote(e *env) string {
	if e.opts.AuditEvents {
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
		{"no drift record naming the state (see docs/benchmarks.md)", fmt.Sprint(o.undetected)},
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

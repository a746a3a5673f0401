package bench

import (
	"context"
	"fmt"
	"math"
	"os"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"text/tabwriter"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"

	"github.com/driftguard/driftguard/audit"
	"github.com/driftguard/driftguard/test/wait"
)

// cmEvent is one state of a ConfigMap as our own informer saw it.
type cmEvent struct {
	rv    uint64
	value string
	at    time.Time
}

// cmWatch is an informer on the benchmark's ConfigMaps, independent of the
// guard's, that remembers every state it sees and when.
type cmWatch struct {
	mu       sync.Mutex
	events   map[string][]cmEvent
	stop     chan struct{}
	shutdown func()
}

func watchConfigMaps(kube kubernetes.Interface, ns string) (*cmWatch, error) {
	w := &cmWatch{events: map[string][]cmEvent{}, stop: make(chan struct{})}
	f := informers.NewSharedInformerFactoryWithOptions(kube, 0, informers.WithNamespace(ns))
	inf := f.Core().V1().ConfigMaps().Informer()
	seen := func(obj any) {
		at := time.Now()
		cm, ok := obj.(*corev1.ConfigMap)
		if !ok {
			return
		}
		w.mu.Lock()
		w.events[cm.Name] = append(w.events[cm.Name], cmEvent{rv: parseRV(cm.ResourceVersion), value: cm.Data["value"], at: at})
		w.mu.Unlock()
	}
	if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{AddFunc: seen, UpdateFunc: func(_, obj any) { seen(obj) }}); err != nil {
		return nil, err
	}
	f.Start(w.stop)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	w.shutdown = func() { close(w.stop); f.Shutdown() }
	if !cache.WaitForCacheSync(ctx.Done(), inf.HasSynced) {
		w.shutdown()
		return nil, fmt.Errorf("ConfigMap informer on %s did not sync within 30s", ns)
	}
	return w, nil
}

// gitAfter returns the first state of name at Git's value newer than rv.
func (w *cmWatch) gitAfter(name string, rv uint64) (cmEvent, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, e := range w.events[name] {
		if e.rv > rv && e.value == gitValue {
			return e, true
		}
	}
	return cmEvent{}, false
}

// edit is one change the load generator made.
type edit struct {
	obj   int
	token string
	sent  time.Time
	resp  time.Time
	rv    uint64
	err   error
}

func (e edit) name() string { return cmName(e.obj) }

// load patches data.value of the ConfigMaps in targets, in order, one edit
// every 1/rate seconds (open loop, at most workers in flight: when the API
// server is slower the rate drops), each to a unique token. It stops
// dispatching after maxDur.
func load(kube kubernetes.Interface, ns, prefix string, targets []int, rate float64, workers int, maxDur time.Duration) []edit {
	edits := make([]edit, len(targets))
	jobs := make(chan int)
	var wg sync.WaitGroup
	ctx, cancel := context.WithTimeout(context.Background(), maxDur+30*time.Second)
	defer cancel()
	for range workers {
		wg.Go(func() {
			for i := range jobs {
				e := edit{obj: targets[i], token: fmt.Sprintf("%s-%05d", prefix, i)}
				patch := fmt.Appendf(nil, `{"data":{"value":%q}}`, e.token)
				e.sent = time.Now()
				cm, err := kube.CoreV1().ConfigMaps(ns).Patch(ctx, e.name(), types.MergePatchType, patch, metav1.PatchOptions{FieldManager: "bench-load"})
				e.resp = time.Now()
				if err != nil {
					e.err = err
				} else {
					e.rv = parseRV(cm.ResourceVersion)
				}
				edits[i] = e
			}
		})
	}
	start := time.Now()
	n := 0
	for i := range targets {
		due := start.Add(time.Duration(float64(i) / rate * float64(time.Second)))
		if d := time.Until(due); d > 0 {
			time.Sleep(d)
		}
		if time.Since(start) > maxDur {
			break
		}
		jobs <- i
		n++
	}
	close(jobs)
	wg.Wait()
	return edits[:n]
}

// outcome is what became of the edits of one run.
type outcome struct {
	edits      []edit
	ok         []edit // edits the API server accepted
	failed     int
	detect     []time.Duration // response → drift record (live == token) reaches the audit writer
	detectRec  []time.Duration // response → that record's own time (guard's clock, before the audit queue)
	revert     []time.Duration // response → our informer sees Git's value again
	undetected int             // accepted, not superseded, and no drift record for the state
	unreverted int             // accepted, not superseded, and not back to Git within revertWindow
	superseded int             // a later edit of the same object landed before any revert
	// revertsPerState counts, for every accepted state, the revert records
	// naming it (live == token): index = number of records, value = states.
	revertsPerState []int
	driftsPerState  []int
	revertRecords   int
	applyRecords    int // full-reconcile applies of the edited objects: they revert too
	apiLatency      []time.Duration
}

const revertWindow = 10 * time.Second

func analyze(edits []edit, w *cmWatch, recs []stamped) outcome {
	o := outcome{edits: edits}
	drifts := map[string]stamped{}
	nDrift := map[string]int{}
	nRevert := map[string]int{}
	for _, s := range recs {
		switch s.rec.Type {
		case audit.Drift:
			for _, v := range liveValues(s.rec) {
				if _, ok := drifts[v]; !ok {
					drifts[v] = s
				}
				nDrift[v]++
			}
		case audit.Revert:
			for _, v := range liveValues(s.rec) {
				nRevert[v]++
				o.revertRecords++
			}
		case audit.Apply:
			if s.rec.Object.Kind == "ConfigMap" {
				o.applyRecords++
			}
		}
	}
	byObj := map[int][]uint64{}
	for _, e := range edits {
		if e.err != nil {
			o.failed++
			continue
		}
		o.ok = append(o.ok, e)
		byObj[e.obj] = append(byObj[e.obj], e.rv)
		o.apiLatency = append(o.apiLatency, e.resp.Sub(e.sent))
	}
	for _, e := range o.ok {
		o.revertsPerState = bump(o.revertsPerState, nRevert[e.token])
		o.driftsPerState = bump(o.driftsPerState, nDrift[e.token])
		back, reverted := w.gitAfter(e.name(), e.rv)
		superseded := slices.ContainsFunc(byObj[e.obj], func(rv uint64) bool { return rv > e.rv && (!reverted || rv < back.rv) })
		if superseded {
			o.superseded++
			continue
		}
		if d, ok := drifts[e.token]; ok {
			o.detect = append(o.detect, d.at.Sub(e.resp))
			o.detectRec = append(o.detectRec, d.rec.Time.Sub(e.resp))
		} else {
			o.undetected++
		}
		if reverted && back.at.Sub(e.resp) <= revertWindow {
			o.revert = append(o.revert, back.at.Sub(e.resp))
		} else {
			o.unreverted++
		}
	}
	return o
}

func bump(h []int, n int) []int {
	for len(h) <= n {
		h = append(h, 0)
	}
	h[n]++
	return h
}

// waitReverted waits until every object edited is back at Git's value after
// its last edit, or until revertWindow after the last response.
func waitReverted(edits []edit, w *cmWatch) {
	last := map[int]uint64{}
	var end time.Time
	for _, e := range edits {
		if e.err == nil && e.rv > last[e.obj] {
			last[e.obj] = e.rv
		}
		if e.resp.After(end) {
			end = e.resp
		}
	}
	// Past the window, what is not back counts as not reverted: no failure here.
	_ = wait.Until(time.Until(end.Add(revertWindow+time.Second)), func() error {
		pending := 0
		for obj, rv := range last {
			if _, ok := w.gitAfter(cmName(obj), rv); !ok {
				pending++
			}
		}
		if pending > 0 {
			return fmt.Errorf("%d objects not back", pending)
		}
		return nil
	})
}

// waitAudit waits until a record of each of types naming each of tokens
// (live == token) reached the audit writer, or no record arrived for quiet,
// or max passed. Records can lag far behind the guard when a slow sink (the
// Event sink) holds up the batch they are in.
func waitAudit(r *stampedRecords, from int, tokens []string, types []audit.Type, quiet, max time.Duration) {
	want := map[string]bool{}
	for _, t := range tokens {
		for _, typ := range types {
			want[string(typ)+"/"+t] = true
		}
	}
	last, next := time.Now(), from
	_ = wait.Until(max, func() error {
		recs, n := r.since(next)
		if n > next {
			last = time.Now()
		}
		next = n
		for _, s := range recs {
			for _, v := range liveValues(s.rec) {
				delete(want, string(s.rec.Type)+"/"+v)
			}
		}
		switch {
		case len(want) == 0:
			return nil
		case time.Since(last) >= quiet:
			return wait.Stop(fmt.Errorf("no record for %s", quiet))
		}
		return fmt.Errorf("%d records to come", len(want))
	})
}

// lastTokens returns the token of the last accepted edit of every object:
// no later edit can supersede it, so the guard must record it.
func lastTokens(edits []edit) []string {
	last := map[int]edit{}
	for _, e := range edits {
		if e.err == nil && e.rv > last[e.obj].rv {
			last[e.obj] = e
		}
	}
	out := make([]string, 0, len(last))
	for _, e := range last {
		out = append(out, e.token)
	}
	return out
}

// quantile returns the q-quantile (nearest rank) of ds, sorting ds.
func quantile(ds []time.Duration, q float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	slices.Sort(ds)
	i := int(math.Ceil(q*float64(len(ds)))) - 1
	return ds[max(0, min(i, len(ds)-1))]
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

func fmtMS(d time.Duration) string { return fmt.Sprintf("%.1f", ms(d)) }

// latencyRow is "n p50 p99 max" of ds in milliseconds.
func latencyRow(name string, ds []time.Duration) []string {
	if len(ds) == 0 {
		return []string{name, "0", "-", "-", "-"}
	}
	return []string{name, fmt.Sprint(len(ds)), fmtMS(quantile(ds, .5)), fmtMS(quantile(ds, .99)), fmtMS(quantile(ds, 1))}
}

func reportLatency(b *testing.B, prefix string, ds []time.Duration) {
	b.ReportMetric(ms(quantile(ds, .5)), prefix+"-p50-ms")
	b.ReportMetric(ms(quantile(ds, .99)), prefix+"-p99-ms")
	b.ReportMetric(ms(quantile(ds, 1)), prefix+"-max-ms")
}

// histogram renders "0:n0 1:n1 2:n2 …".
func histogram(h []int) string {
	var parts []string
	for n, c := range h {
		if c > 0 {
			parts = append(parts, fmt.Sprintf("%d:%d", n, c))
		}
	}
	return strings.Join(parts, " ")
}

func histMean(h []int) float64 {
	sum, n := 0, 0
	for k, c := range h {
		sum += k * c
		n += c
	}
	if n == 0 {
		return 0
	}
	return float64(sum) / float64(n)
}

// printTable writes a titled, aligned table to stdout, where `make bench`
// shows it next to the benchmark lines.
func printTable(title string, header []string, rows [][]string) {
	var sb strings.Builder
	fmt.Fprintf(&sb, "\n== %s (load average %s, %d CPUs)\n", title, loadAvg(), runtime.NumCPU())
	tw := tabwriter.NewWriter(&sb, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, strings.Join(header, "\t"))
	for _, r := range rows {
		fmt.Fprintln(tw, strings.Join(r, "\t"))
	}
	_ = tw.Flush()
	fmt.Fprint(os.Stdout, sb.String())
}

// loadAvg returns the 1-minute load average: other work on a shared machine
// shows in the figures, so every table says how busy it was.
func loadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return "?"
	}
	return f[0]
}

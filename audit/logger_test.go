package audit

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	dto "github.com/prometheus/client_model/go"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/driftguard/driftguard/test/wait"
)

var (
	_ manager.Runnable               = (*Logger)(nil)
	_ manager.LeaderElectionRunnable = (*Logger)(nil)
)

func TestLogSetsTime(t *testing.T) {
	fixed := time.Date(2026, 1, 2, 3, 4, 5, 6, time.FixedZone("X", -7200))
	tests := []struct {
		name  string
		in    time.Time
		check func(t *testing.T, got time.Time, before, after time.Time)
	}{
		{"zero time is set to now", time.Time{}, func(t *testing.T, got, before, after time.Time) {
			if got.Before(before) || got.After(after) {
				t.Errorf("time %v not within [%v, %v]", got, before, after)
			}
		}},
		{"given time is kept", fixed, func(t *testing.T, got, _, _ time.Time) {
			if !got.Equal(fixed) {
				t.Errorf("time %v, want %v", got, fixed)
			}
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			sink := &memSink{name: "mem"}
			l := newTestLogger(logr.Discard(), 10, sink)
			startLogger(t, l)
			before := time.Now()
			l.Log(context.Background(), Record{Type: Apply, Time: tc.in})
			after := time.Now()
			if err := flush(t, l); err != nil {
				t.Fatal(err)
			}
			got := sink.got()
			if len(got) != 1 {
				t.Fatalf("got %d records", len(got))
			}
			if got[0].Time.Location() != time.UTC {
				t.Errorf("time not UTC: %v", got[0].Time.Location())
			}
			tc.check(t, got[0].Time, before, after)
		})
	}
}

func TestLogCopiesSlices(t *testing.T) {
	sink := &memSink{name: "mem", gate: make(chan struct{})}
	l := newTestLogger(logr.Discard(), 10, sink)
	startLogger(t, l)
	groups := []string{"dev"}
	fields := []Field{{Path: "/a"}}
	l.Log(context.Background(), Record{Type: Drift, Groups: groups, Fields: fields})
	groups[0], fields[0].Path = "changed", "/changed"
	close(sink.gate)
	if err := flush(t, l); err != nil {
		t.Fatal(err)
	}
	got := sink.got()[0]
	if got.Groups[0] != "dev" || got.Fields[0].Path != "/a" {
		t.Errorf("record changed after Log: %+v", got)
	}
}

func TestEverySinkReceivesEveryRecordInOrder(t *testing.T) {
	for _, n := range []int{1, 3} {
		t.Run(fmt.Sprintf("%d sinks", n), func(t *testing.T) {
			var sinks []Sink
			var mems []*memSink
			for i := range n {
				m := &memSink{name: "mem", delay: time.Duration(i) * time.Millisecond}
				mems = append(mems, m)
				sinks = append(sinks, m)
			}
			l := newTestLogger(logr.Discard(), 8, sinks...)
			startLogger(t, l)
			var want []string
			for i := range 50 {
				l.Log(context.Background(), rec(i))
				want = append(want, rec(i).Object.Name)
			}
			if err := flush(t, l); err != nil {
				t.Fatal(err)
			}
			for i, m := range mems {
				if got := names(m.got()); !reflect.DeepEqual(got, want) {
					t.Errorf("sink %d got %v", i, got)
				}
			}
			st := l.Stats()
			wantNames := []string{"mem", "mem#2", "mem#3"}[:n]
			for _, name := range wantNames {
				if st.Written[name] != 50 || st.Failed[name] != 0 {
					t.Errorf("stats for %s: written %d failed %d", name, st.Written[name], st.Failed[name])
				}
			}
		})
	}
}

func TestFailingSink(t *testing.T) {
	errDown := errors.New("disk on fire")
	tests := []struct {
		name        string
		fail        func(attempt int) error
		wantFailed  uint64
		wantWritten uint64
		wantErr     bool // SinkErrors and Flush report an error
		wantTries   int  // Write calls on the failing sink for one batch
		wantMetric  int  // rise of driftguard_audit_sink_errors_total{sink="bad"}
	}{
		{
			name:       "always fails: retried, counted, reported",
			fail:       func(int) error { return errDown },
			wantFailed: 3, wantErr: true, wantTries: 4, wantMetric: 4,
		},
		{
			name:        "fails twice then works: retried, nothing failed",
			fail:        func(a int) error { return map[bool]error{true: errDown}[a <= 2] },
			wantWritten: 3, wantTries: 3, wantMetric: 2,
		},
		{
			name:       "permanent partial failure: not retried",
			fail:       func(int) error { return &partialError{failed: 1, permanent: true, err: errDown} },
			wantFailed: 1, wantWritten: 2, wantErr: true, wantTries: 1, wantMetric: 1,
		},
		{
			name:       "panic: counted as failure",
			fail:       func(int) error { panic("boom") },
			wantFailed: 3, wantErr: true, wantTries: 4, wantMetric: 4,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			bad := &memSink{name: "bad", fail: tc.fail, gate: make(chan struct{})}
			good := &memSink{name: "good"}
			spy := &logSpy{}
			l := newTestLogger(spy.logger(), 10, bad, good)
			before := counterValue(t, sinkErrorsTotal.WithLabelValues("bad"))
			for i := range 3 {
				l.Log(context.Background(), rec(i))
			}
			startLogger(t, l) // after the three are queued: they go in one batch
			close(bad.gate)
			err := flush(t, l)
			if (err != nil) != tc.wantErr {
				t.Errorf("Flush error %v, want error %v", err, tc.wantErr)
			}
			if tc.wantErr && err != nil && !strings.Contains(err.Error(), "bad") {
				t.Errorf("Flush error does not name the sink: %v", err)
			}
			if got := len(good.got()); got != 3 {
				t.Errorf("good sink got %d records, want 3", got)
			}
			st := l.Stats()
			if st.Failed["bad"] != tc.wantFailed || st.Written["bad"] != tc.wantWritten {
				t.Errorf("bad sink stats: written %d failed %d", st.Written["bad"], st.Failed["bad"])
			}
			if st.Failed["good"] != 0 || st.Written["good"] != 3 {
				t.Errorf("good sink stats: %+v", st)
			}
			if st.Dropped != 0 {
				t.Errorf("dropped %d, want 0: another sink took the records", st.Dropped)
			}
			se := l.SinkErrors()
			if (se["bad"] != nil) != tc.wantErr || se["good"] != nil {
				t.Errorf("SinkErrors = %v", se)
			}
			bad.mu.Lock()
			tries := bad.attempts
			bad.mu.Unlock()
			if tries != tc.wantTries {
				t.Errorf("Write called %d times, want %d", tries, tc.wantTries)
			}
			if got := counterValue(t, sinkErrorsTotal.WithLabelValues("bad")) - before; got != float64(tc.wantMetric) {
				t.Errorf("sink error metric rose by %v, want %d", got, tc.wantMetric)
			}
			if tc.wantErr && len(spy.matching("audit sink did not take records", `"sink"="bad"`)) == 0 {
				t.Errorf("failure not logged; log: %v", spy.lines)
			}
			// A later healthy write clears the sink's error.
			bad.fail = nil
			l.Log(context.Background(), rec(9))
			if err := flush(t, l); err != nil {
				t.Errorf("Flush after recovery: %v", err)
			}
			if se := l.SinkErrors(); se["bad"] != nil {
				t.Errorf("SinkErrors after recovery = %v", se)
			}
		})
	}
}

func TestEverySinkFailingFallsBackToProcessLog(t *testing.T) {
	spy := &logSpy{}
	bad := &memSink{name: "bad", fail: func(int) error { return errors.New("nope") }}
	l := newTestLogger(spy.logger(), 10, bad)
	startLogger(t, l)
	l.Log(context.Background(), rec(7))
	if err := flush(t, l); err == nil {
		t.Error("Flush returned nil, want the sink's error")
	}
	if got := l.Stats().Dropped; got != 1 {
		t.Errorf("dropped %d, want 1", got)
	}
	if len(spy.matching("recorded here instead", "web-007")) != 1 {
		t.Errorf("record not in the process log: %v", spy.lines)
	}
}

func TestNoSinkWritesToProcessLog(t *testing.T) {
	spy := &logSpy{}
	l := newTestLogger(spy.logger(), 10)
	startLogger(t, l)
	l.Log(context.Background(), rec(1))
	if err := flush(t, l); err != nil {
		t.Fatal(err)
	}
	if len(spy.matching("audit record", "web-001")) != 1 {
		t.Errorf("record not in the process log: %v", spy.lines)
	}
}

func TestBackpressure(t *testing.T) {
	tests := []struct {
		name      string
		producers int
		each      int
	}{
		{"one producer", 1, 100},
		{"four producers", 4, 25},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			slow := &memSink{name: "slow", delay: 2 * time.Millisecond}
			l := newTestLogger(logr.Discard(), 2, slow)
			startLogger(t, l)
			var wg sync.WaitGroup
			for p := range tc.producers {
				wg.Go(func() {
					for i := range tc.each {
						r := rec(i)
						r.User = fmt.Sprintf("p%d", p)
						l.Log(context.Background(), r)
						if q := l.Stats().QueueLen; q > 2 {
							t.Errorf("queue length %d over its size 2", q)
						}
					}
				})
			}
			wg.Wait()
			if err := flush(t, l); err != nil {
				t.Fatal(err)
			}
			got := slow.got()
			if len(got) != tc.producers*tc.each {
				t.Fatalf("got %d records, want %d", len(got), tc.producers*tc.each)
			}
			next := map[string]int{}
			for _, r := range got {
				want := rec(next[r.User]).Object.Name
				if r.Object.Name != want {
					t.Fatalf("producer %s: got %s, want %s (out of order)", r.User, r.Object.Name, want)
				}
				next[r.User]++
			}
			if d := l.Stats().Dropped; d != 0 {
				t.Errorf("dropped %d", d)
			}
		})
	}
}

func TestFullQueueAndCallerGivesUp(t *testing.T) {
	ctxCancelled, cancel := context.WithCancel(context.Background())
	cancel()
	ctxShort, cancelShort := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancelShort()
	tests := []struct {
		name      string
		ctx       context.Context
		wantCause string
	}{
		{"cancelled", ctxCancelled, "context canceled"},
		{"deadline", ctxShort, "deadline exceeded"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			spy := &logSpy{}
			sink := &memSink{name: "mem"}
			l := newTestLogger(spy.logger(), 1, sink) // never started: the queue stays full
			before := counterValue(t, droppedTotal)
			l.Log(context.Background(), rec(1))
			done := make(chan struct{})
			go func() {
				l.Log(tc.ctx, rec(2))
				close(done)
			}()
			select {
			case <-done:
			case <-time.After(5 * time.Second):
				t.Fatal("Log did not return when its context ended")
			}
			if got := l.Stats().Dropped; got != 1 {
				t.Errorf("dropped %d, want 1", got)
			}
			if got := counterValue(t, droppedTotal) - before; got != 1 {
				t.Errorf("dropped metric rose by %v, want 1", got)
			}
			if lines := spy.matching("recorded here instead", "web-002", tc.wantCause); len(lines) != 1 {
				t.Errorf("dropped record not in the process log: %v", spy.lines)
			}
			if err := l.Close(); err != nil {
				t.Fatal(err)
			}
			if got := names(sink.got()); !reflect.DeepEqual(got, []string{"web-001"}) {
				t.Errorf("sink got %v, want the queued record", got)
			}
		})
	}
}

func TestFlush(t *testing.T) {
	t.Run("waits for records logged before it", func(t *testing.T) {
		sink := &memSink{name: "mem", gate: make(chan struct{})}
		l := newTestLogger(logr.Discard(), 10, sink)
		startLogger(t, l)
		for i := range 3 {
			l.Log(context.Background(), rec(i))
		}
		flushed := make(chan error, 1)
		go func() { flushed <- l.Flush(context.Background()) }()
		select {
		case err := <-flushed:
			t.Fatalf("Flush returned %v before the sink wrote", err)
		case <-time.After(50 * time.Millisecond):
		}
		close(sink.gate)
		if err := <-flushed; err != nil {
			t.Fatal(err)
		}
		if got := len(sink.got()); got != 3 {
			t.Errorf("after Flush the sink has %d records, want 3", got)
		}
	})
	t.Run("returns when its context ends", func(t *testing.T) {
		sink := &memSink{name: "mem", gate: make(chan struct{})}
		l := newTestLogger(logr.Discard(), 10, sink)
		startLogger(t, l)
		defer close(sink.gate)
		l.Log(context.Background(), rec(0))
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Millisecond)
		defer cancel()
		if err := l.Flush(ctx); !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("Flush = %v, want deadline exceeded", err)
		}
	})
	t.Run("reports failures once", func(t *testing.T) {
		sink := &memSink{name: "mem", fail: func(a int) error {
			if a <= 4 {
				return errors.New("down")
			}
			return nil
		}}
		l := newTestLogger(logr.Discard(), 10, sink)
		startLogger(t, l)
		l.Log(context.Background(), rec(0))
		if err := flush(t, l); err == nil || !strings.Contains(err.Error(), "down") {
			t.Errorf("first Flush = %v, want the sink's error", err)
		}
		if err := flush(t, l); err != nil {
			t.Errorf("second Flush = %v, want nil", err)
		}
	})
	t.Run("on a closed logger returns nil", func(t *testing.T) {
		l := newTestLogger(logr.Discard(), 10, &memSink{name: "mem"})
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
		if err := l.Flush(context.Background()); err != nil {
			t.Errorf("Flush = %v", err)
		}
	})
}

func TestCloseDrains(t *testing.T) {
	tests := []struct {
		name    string
		started bool
	}{
		{"never started", false},
		{"running", true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			sink := &memSink{name: "mem", delay: time.Millisecond}
			spy := &logSpy{}
			l := newTestLogger(spy.logger(), 100, sink)
			startErr := make(chan error, 1)
			if tc.started {
				go func() { startErr <- l.Start(context.Background()) }()
				if err := flush(t, l); err != nil { // returns once the loop runs
					t.Fatal(err)
				}
			}
			for i := range 50 {
				l.Log(context.Background(), rec(i))
			}
			if err := l.Close(); err != nil {
				t.Fatal(err)
			}
			if got := len(sink.got()); got != 50 {
				t.Errorf("after Close the sink has %d records, want 50", got)
			}
			if !sink.isClosed() {
				t.Error("sink not closed")
			}
			if tc.started {
				if err := <-startErr; err != nil {
					t.Errorf("Start = %v", err)
				}
			} else if err := l.Start(context.Background()); err == nil {
				t.Error("Start after Close succeeded")
			}
			l.Log(context.Background(), rec(99))
			if got := l.Stats().Dropped; got != 1 {
				t.Errorf("record after Close: dropped %d, want 1", got)
			}
			if len(spy.matching("web-099", "audit logger closed")) != 1 {
				t.Errorf("record after Close not in the process log: %v", spy.lines)
			}
			if err := l.Close(); err != nil {
				t.Errorf("second Close = %v", err)
			}
		})
	}
}

func TestStartEndsThenLogWritesDirectly(t *testing.T) {
	sink := &memSink{name: "mem"}
	l := newTestLogger(logr.Discard(), 10, sink)
	stop := startLogger(t, l)
	l.Log(context.Background(), rec(1))
	stop()
	if got := len(sink.got()); got != 1 {
		t.Fatalf("Start did not drain: sink has %d records", got)
	}
	if err := l.Start(context.Background()); err == nil {
		t.Error("second Start succeeded")
	}
	// Between the end of Start and Close (manager shutdown), records are
	// written on the caller's goroutine rather than lost.
	l.Log(context.Background(), rec(2))
	if got := names(sink.got()); !reflect.DeepEqual(got, []string{"web-001", "web-002"}) {
		t.Errorf("sink got %v", got)
	}
	if d := l.Stats().Dropped; d != 0 {
		t.Errorf("dropped %d", d)
	}
}

func TestConcurrentLogFlushClose(t *testing.T) {
	sink := &memSink{name: "mem"}
	spy := &logSpy{}
	l := newTestLogger(spy.logger(), 4, sink)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() { _ = l.Start(ctx) }()
	var wg sync.WaitGroup
	const producers, each = 8, 100
	for range producers {
		wg.Go(func() {
			for i := range each {
				l.Log(context.Background(), rec(i))
				if i%25 == 0 {
					_ = l.Flush(context.Background())
				}
			}
		})
	}
	// Close while the producers log.
	wait.Eventually(t, 10*time.Second, "the producers under way", func() error {
		if len(sink.got()) == 0 {
			return errors.New("nothing written yet")
		}
		return nil
	})
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	// Every record is either in the sink or, logged after Close, in the
	// process log: none is lost.
	if got, dropped := len(sink.got()), int(l.Stats().Dropped); got+dropped != producers*each {
		t.Errorf("sink %d + dropped %d != %d", got, dropped, producers*each)
	}
}

func TestMetricsRegistered(t *testing.T) {
	l := newTestLogger(logr.Discard(), 10, &memSink{name: "mem"})
	_ = newTestLogger(logr.Discard(), 10) // a second Logger must not fail registration
	startLogger(t, l)
	before := counterValue(t, recordsTotal.WithLabelValues("decision", "deny"))
	l.Log(context.Background(), Record{Type: Decision, Action: "deny"})
	if err := flush(t, l); err != nil {
		t.Fatal(err)
	}
	if got := counterValue(t, recordsTotal.WithLabelValues("decision", "deny")) - before; got != 1 {
		t.Errorf("records_total rose by %v, want 1", got)
	}
	families, err := metrics.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	found := map[string]bool{}
	for _, f := range families {
		found[f.GetName()] = true
	}
	for _, name := range []string{
		"driftguard_audit_records_total", "driftguard_audit_sink_errors_total",
		"driftguard_audit_dropped_total", "driftguard_audit_queue_length",
	} {
		// Vectors appear once they have a child; sink_errors may have none
		// when this test runs alone.
		if !found[name] && name != "driftguard_audit_sink_errors_total" {
			t.Errorf("metric %s not on the controller-runtime registry", name)
		}
	}
}

type metricWriter interface{ Write(*dto.Metric) error }

func counterValue(t *testing.T, c metricWriter) float64 {
	t.Helper()
	var m dto.Metric
	if err := c.Write(&m); err != nil {
		t.Fatal(err)
	}
	return m.GetCounter().GetValue()
}

// TestPendingSinkErrorsBounded: a sink that fails batch after batch while
// nobody calls Flush keeps at most maxPendingErrs errors; Flush reports
// those and how many more there were, then starts over.
func TestPendingSinkErrorsBounded(t *testing.T) {
	bad := &memSink{name: "bad", fail: func(int) error { return &partialError{failed: 1, permanent: true, err: errors.New("nope")} }}
	good := &memSink{name: "good"}
	l := newTestLogger(logr.Discard(), 10, good, bad)
	startLogger(t, l)
	const batches = 100
	for i := range batches {
		l.Log(context.Background(), rec(i))
		// One batch at a time: wait until the good sink has the record.
		wait.Eventually(t, 5*time.Second, fmt.Sprintf("record %d in the good sink", i), func() error {
			if n := len(good.got()); n <= i {
				return fmt.Errorf("%d records", n)
			}
			return nil
		})
	}
	l.writeMu.Lock()
	kept := len(l.pendingErrs)
	l.writeMu.Unlock()
	if kept > maxPendingErrs {
		t.Fatalf("%d sink errors kept for Flush, want at most %d", kept, maxPendingErrs)
	}
	err := flush(t, l)
	if err == nil || !strings.Contains(err.Error(), fmt.Sprintf("and %d more sink failures", batches-maxPendingErrs)) {
		t.Fatalf("Flush = %v, want %d errors and the count of the rest", err, maxPendingErrs)
	}
	if err := flush(t, l); err != nil {
		t.Fatalf("second Flush = %v, want nil", err)
	}
}

// TestLoggerSummarisesSinkFailures: a sink that falls behind (an async
// sink whose buffer is full, as the Event sink under a flood) fails a
// write per record; the Logger logs the first at once and sums up the rest
// in one line per interval, with every record counted in the lines, in
// Stats and in driftguard_audit_sink_failed_records_total.
func TestLoggerSummarisesSinkFailures(t *testing.T) {
	for _, tc := range []struct {
		name      string
		interval  time.Duration
		pauses    int // pauses of 120 ms spread over the run
		wantLines func(n int) bool
	}{
		// One line at the first failure, one summary at shutdown.
		{name: "run shorter than the interval", interval: time.Hour, pauses: 0, wantLines: func(n int) bool { return n == 2 }},
		// About one line per interval: 5 pauses of 120 ms over 100 ms intervals.
		{name: "several intervals", interval: 100 * time.Millisecond, pauses: 5, wantLines: func(n int) bool { return n >= 2 && n <= 12 }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			spy := &logSpy{}
			good := &memSink{name: "stdout"}
			gate := &slowSink{release: make(chan struct{})}
			behind := NewAsyncSink(gate, 1, 1, time.Second)
			l := newTestLogger(spy.logger(), 0, good, behind)
			l.failureEvery = tc.interval
			metric := sinkFailedRecordsTotal.WithLabelValues("slow")
			before := counterValue(t, metric)
			stop := startLogger(t, l)

			const n = 300
			for i := range n {
				l.Log(context.Background(), rec(i))
				_ = flush(t, l) // one record a batch, as under a flood of single records
				if tc.pauses > 0 && i%(n/tc.pauses) == 0 {
					time.Sleep(120 * time.Millisecond)
				}
			}
			stop()
			close(gate.release)

			failed := l.Stats().Failed["slow"]
			if failed < n-10 {
				t.Fatalf("the sink behind failed %d of %d records; the test needs most to fail", failed, n)
			}
			lines := spy.matching("audit sink did not take records", `"sink"="slow"`)
			if !tc.wantLines(len(lines)) {
				t.Errorf("%d lines about the failing sink for %d failed records:\n%s", len(lines), failed, strings.Join(lines, "\n"))
			}
			var sum uint64
			re := regexp.MustCompile(`"records"=(\d+)`)
			for _, line := range lines {
				m := re.FindStringSubmatch(line)
				if m == nil {
					t.Fatalf("line without a count: %s", line)
				}
				v, _ := strconv.ParseUint(m[1], 10, 64)
				sum += v
			}
			if sum != failed {
				t.Errorf("the lines count %d records, Stats %d", sum, failed)
			}
			if got := counterValue(t, metric) - before; got != float64(failed) {
				t.Errorf("driftguard_audit_sink_failed_records_total{sink=slow} grew by %v, want %d", got, failed)
			}
			if got := len(good.got()); got != n {
				t.Errorf("stdout sink got %d records, want %d", got, n)
			}
		})
	}
}

package audit

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
)

const (
	// DefaultQueueSize is the queue size NewLogger uses when given 0 or less.
	DefaultQueueSize = 10000
	// maxBatch caps how many queued records go to the sinks in one Write.
	maxBatch = 1000
	// defaultDrainTimeout bounds the final drain when the Logger stops.
	defaultDrainTimeout = 30 * time.Second
	// FailureLogInterval is how often, at most, the Logger writes a line
	// about a sink that does not take records: the first failure at once,
	// the ones after it summed up (records, failed writes, last error) in
	// one line per interval, so a sink that falls behind under load (the
	// Event sink) does not write a line per record.
	FailureLogInterval = 10 * time.Second
)

// errClosed is the cause logged for a record given to a closed Logger.
var errClosed = errors.New("audit logger closed")

// defaultBackoff is the wait before each retry of a failed sink Write.
var defaultBackoff = []time.Duration{100 * time.Millisecond, 500 * time.Millisecond}

type lifecycle int

const (
	stateOpen     lifecycle = iota // before and while the writer loop runs: Log queues
	stateDraining                  // the loop empties the queue: Log waits
	stateStopped                   // the loop has ended, sinks are open: Log writes synchronously
	stateClosed                    // sinks are closed: Log falls back to the process log
)

// item is a queued record, or a Flush marker when flush is not nil.
type item struct {
	rec   Record
	flush chan error
}

// sinkState is a sink and what the Logger knows of its health.
type sinkState struct {
	sink    Sink
	name    string
	written atomic.Uint64
	failed  atomic.Uint64
	errs    prometheus.Counter
	lost    prometheus.Counter // records the sink did not take

	mu      sync.Mutex
	lastErr error

	// Failures not yet logged (see FailureLogInterval); guarded by sumMu.
	sumMu      sync.Mutex
	sumRecords uint64
	sumWrites  int
	sumErr     error
	lastLogged time.Time
}

func (s *sinkState) setErr(err error) {
	s.mu.Lock()
	s.lastErr = err
	s.mu.Unlock()
}

// Stats is a snapshot of a Logger's counters.
type Stats struct {
	// Written counts, per sink name, records the sink took.
	Written map[string]uint64
	// Failed counts, per sink name, records the sink did not take after all
	// retries.
	Failed map[string]uint64
	// Dropped counts records written only to the process log, as a last
	// resort: the queue stayed full until the caller's context ended, the
	// Logger was closed, or every sink failed to take them.
	Dropped uint64
	// QueueLen is the number of records (and Flush markers) waiting.
	QueueLen int
}

// Logger queues audit records and writes them, in batches, to every sink.
//
// Records are written in the order Log was called (across goroutines, in the
// order their calls took effect). Log returns at once while the queue has
// room, and blocks while it is full: audit records are never dropped to keep
// up. A Logger is used by many goroutines at once.
//
// Lifecycle: NewLogger, then Start (directly, or as a controller-runtime
// Runnable added to the manager), then Close. Records logged before Start are
// kept in the queue; records logged after Start has returned but before Close
// are written synchronously; records logged after Close go to the process log.
type Logger struct {
	log          logr.Logger
	sinks        []*sinkState
	queue        chan *item // pointers: a queue of 4096 Records by value would hold 1.6 MB while empty
	backoff      []time.Duration
	drainTimeout time.Duration
	failureEvery time.Duration // FailureLogInterval; shorter in tests

	mu       sync.RWMutex // guards state; held for reading while a record is sent to queue (until stopping is closed)
	state    lifecycle
	started  atomic.Bool // set by the first Start, or by Close when it drains itself
	stopOnce sync.Once
	stopping chan struct{} // closed when the writer loop is asked to stop
	drained  chan struct{} // closed when the queue is empty and state is stateStopped

	writeMu sync.Mutex // serializes writes to the sinks
	// Sink failures since the last Flush, for Flush to return; guarded by
	// writeMu. Only the first maxPendingErrs are kept, the rest counted:
	// nothing may need to call Flush, and a sink that keeps failing (the
	// Event sink under a burst) must not grow the heap one error a batch.
	pendingErrs []error
	pendingMore int

	dropped atomic.Uint64

	closeOnce sync.Once
	closeErr  error
}

// NewLogger returns a Logger writing to sinks through a queue of queueSize
// records (DefaultQueueSize when queueSize <= 0). Sinks with the same name are
// told apart in Stats and SinkErrors by a "#2", "#3" suffix. With no sink at
// all, records go to log. The Logger writes nothing until Start runs.
func NewLogger(log logr.Logger, queueSize int, sinks ...Sink) *Logger {
	if queueSize <= 0 {
		queueSize = DefaultQueueSize
	}
	l := &Logger{
		log:          log,
		queue:        make(chan *item, queueSize),
		backoff:      defaultBackoff,
		drainTimeout: defaultDrainTimeout,
		failureEvery: FailureLogInterval,
		stopping:     make(chan struct{}),
		drained:      make(chan struct{}),
	}
	seen := map[string]int{}
	for _, s := range sinks {
		if s == nil {
			continue
		}
		name := s.Name()
		seen[name]++
		if n := seen[name]; n > 1 {
			name += "#" + strconv.Itoa(n)
		}
		l.sinks = append(l.sinks, &sinkState{sink: s, name: name,
			errs: sinkErrorsTotal.WithLabelValues(name), lost: sinkFailedRecordsTotal.WithLabelValues(name)})
	}
	return l
}

// Log queues r for every sink. A zero r.Time is set to now; the time is kept
// in UTC. Log copies r's slices, but not the values inside Fields. URLs are
// redacted (see withoutCredentials), and every secret value the process
// knows replaced with redact.Marker (see withoutSecrets), before anything
// sees the record.
//
// While the queue is full Log blocks until there is room or ctx is done; in
// the latter case the record is counted as dropped and written to the process
// log (the logr.Logger given to NewLogger), so it is never lost silently.
func (l *Logger) Log(ctx context.Context, r Record) {
	if r.Time.IsZero() {
		r.Time = time.Now()
	}
	r.Time = r.Time.UTC()
	r.Groups = append([]string(nil), r.Groups...)
	r.Fields = append([]Field(nil), r.Fields...)
	if r.Source != nil {
		src := *r.Source
		r.Source = &src
	}
	withoutCredentials(&r)
	withoutSecrets(&r)
	recordsTotal.WithLabelValues(string(r.Type), r.Action).Inc()
	countDecision(&r)

	it := &item{rec: r}
	for {
		l.mu.RLock()
		switch l.state {
		case stateOpen:
			select {
			case l.queue <- it:
				l.mu.RUnlock()
				queueLength.Set(float64(len(l.queue)))
				return
			default:
			}
			select {
			case l.queue <- it:
				l.mu.RUnlock()
				queueLength.Set(float64(len(l.queue)))
				return
			case <-ctx.Done():
				l.mu.RUnlock()
				l.drop(r, fmt.Errorf("audit queue full (%d records) until the caller gave up: %w", cap(l.queue), context.Cause(ctx)))
				return
			case <-l.stopping:
				l.mu.RUnlock()
			}
		case stateDraining:
			l.mu.RUnlock()
		case stateStopped:
			// The writer loop has ended; the sinks are still open. Hold the
			// read lock so Close waits for this write.
			l.writeBatch(context.WithoutCancel(ctx), []Record{r})
			l.mu.RUnlock()
			return
		default:
			l.mu.RUnlock()
			l.drop(r, errClosed)
			return
		}
		// The loop is stopping: wait for it to drain, then write directly.
		select {
		case <-l.drained:
		case <-ctx.Done():
			l.drop(r, fmt.Errorf("audit logger stopping: %w", context.Cause(ctx)))
			return
		}
	}
}

// Start runs the writer loop until ctx is done or Close is called, then
// writes everything still queued (within 30 seconds) and returns nil. It
// implements controller-runtime's manager.Runnable. Start may be called once.
func (l *Logger) Start(ctx context.Context) error {
	// Whoever sets started owns the queue: Start here, or Close for a Logger
	// never started. Taking l.mu here could deadlock with a Log that waits on
	// a full queue.
	if !l.started.CompareAndSwap(false, true) {
		return errors.New("start audit logger: already started or closed")
	}

	// Writes outlive ctx: records queued before the end must still be written.
	writeCtx := context.WithoutCancel(ctx)
	tick := time.NewTicker(l.failureEvery)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			l.shutdown(writeCtx)
			return nil
		case <-l.stopping:
			l.shutdown(writeCtx)
			return nil
		case <-tick.C:
			l.logFailures(false)
		case it := <-l.queue:
			l.process(writeCtx, l.collect(it))
		}
	}
}

// NeedLeaderElection returns false: every replica writes its own records.
func (l *Logger) NeedLeaderElection() bool { return false }

// Flush waits until every record logged before the call has been written to
// the sinks (or has failed after retries). It returns the sink failures seen
// since the previous Flush (the first 16 in full, then how many more), or
// ctx's error when ctx ends first. Before Start,
// Flush waits for Start. Flush on a stopped or closed Logger returns nil at
// once: it has no queue left.
func (l *Logger) Flush(ctx context.Context) error {
	done := make(chan error, 1)
	l.mu.RLock()
	switch l.state {
	case stateOpen:
		select {
		case l.queue <- &item{flush: done}:
			l.mu.RUnlock()
		case <-ctx.Done():
			l.mu.RUnlock()
			return fmt.Errorf("flush audit records: %w", context.Cause(ctx))
		case <-l.stopping:
			l.mu.RUnlock()
			return l.waitDrained(ctx)
		}
	case stateDraining:
		l.mu.RUnlock()
		return l.waitDrained(ctx)
	default:
		l.mu.RUnlock()
		return nil
	}
	select {
	case err := <-done:
		if err != nil {
			return fmt.Errorf("flush audit records: %w", err)
		}
		return nil
	case <-ctx.Done():
		return fmt.Errorf("flush audit records: %w", context.Cause(ctx))
	}
}

func (l *Logger) waitDrained(ctx context.Context) error {
	select {
	case <-l.drained:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("flush audit records: %w", context.Cause(ctx))
	}
}

// Close stops the writer loop, writes what is queued, and closes the sinks. A
// Logger that was never started is drained by Close itself. Close is
// idempotent; later calls return the first result.
func (l *Logger) Close() error {
	l.closeOnce.Do(func() {
		l.beginStop()
		if l.started.CompareAndSwap(false, true) {
			// Never started, and now it cannot be: drain here.
			l.shutdown(context.Background())
		}
		<-l.drained

		l.mu.Lock() // waits for synchronous writes of stateStopped
		l.state = stateClosed
		l.mu.Unlock()
		l.logFailures(true)

		var errs []error
		for _, s := range l.sinks {
			if err := s.sink.Close(); err != nil {
				// An async sink reports here what it did not send.
				var pe *partialError
				if errors.As(err, &pe) && pe.failed > 0 {
					s.failed.Add(uint64(pe.failed))
					s.lost.Add(float64(pe.failed))
				}
				errs = append(errs, fmt.Errorf("close audit sink %s: %w", s.name, err))
			}
		}
		l.closeErr = errors.Join(errs...)
	})
	return l.closeErr
}

// Stats returns a snapshot of the counters.
func (l *Logger) Stats() Stats {
	st := Stats{
		Written:  make(map[string]uint64, len(l.sinks)),
		Failed:   make(map[string]uint64, len(l.sinks)),
		Dropped:  l.dropped.Load(),
		QueueLen: len(l.queue),
	}
	for _, s := range l.sinks {
		st.Written[s.name] = s.written.Load()
		st.Failed[s.name] = s.failed.Load()
	}
	return st
}

// SinkErrors returns, per sink name, the error of its last write, or nil when
// that write succeeded.
func (l *Logger) SinkErrors() map[string]error {
	m := make(map[string]error, len(l.sinks))
	for _, s := range l.sinks {
		s.mu.Lock()
		m[s.name] = s.lastErr
		s.mu.Unlock()
	}
	return m
}

func (l *Logger) beginStop() { l.stopOnce.Do(func() { close(l.stopping) }) }

// shutdown empties the queue and moves to stateStopped. It runs once, on the
// writer loop or, for a Logger never started, in Close.
func (l *Logger) shutdown(ctx context.Context) {
	l.beginStop()
	// Senders hold the read lock while they send; once this lock is taken no
	// record can enter the queue any more.
	l.mu.Lock()
	l.state = stateDraining
	l.mu.Unlock()

	ctx, cancel := context.WithTimeout(ctx, l.drainTimeout)
	defer cancel()
	for drained := false; !drained; {
		select {
		case it := <-l.queue:
			l.process(ctx, l.collect(it))
		default:
			drained = true
		}
	}
	queueLength.Set(0)
	l.logFailures(true)

	l.mu.Lock()
	l.state = stateStopped
	l.mu.Unlock()
	close(l.drained)
}

// collected is a batch of records and the Flush marker that followed them.
type collected struct {
	batch  []Record
	marker chan error
}

// collect takes first and whatever else is queued, up to maxBatch records,
// stopping after the first Flush marker.
func (l *Logger) collect(first *item) collected {
	var c collected
	it := first
	for {
		if it.flush != nil {
			c.marker = it.flush
			return c
		}
		c.batch = append(c.batch, it.rec)
		if len(c.batch) >= maxBatch {
			return c
		}
		select {
		case it = <-l.queue:
		default:
			return c
		}
	}
}

func (l *Logger) process(ctx context.Context, c collected) {
	if len(c.batch) > 0 {
		l.writeBatch(ctx, c.batch)
	}
	queueLength.Set(float64(len(l.queue)))
	if c.marker != nil {
		l.writeMu.Lock()
		c.marker <- l.takePending()
		l.writeMu.Unlock()
	}
}

// maxPendingErrs is how many sink failures Flush reports in full.
const maxPendingErrs = 16

func (l *Logger) addPending(err error) {
	if len(l.pendingErrs) < maxPendingErrs {
		l.pendingErrs = append(l.pendingErrs, err)
		return
	}
	l.pendingMore++
}

// takePending returns the sink failures since the last call and forgets them.
func (l *Logger) takePending() error {
	errs := l.pendingErrs
	if l.pendingMore > 0 {
		errs = append(errs, fmt.Errorf("and %d more sink failures", l.pendingMore))
	}
	l.pendingErrs, l.pendingMore = nil, 0
	return errors.Join(errs...)
}

// writeBatch writes batch to every sink at once, each with retries, and waits
// for all. When no sink takes the batch, its records go to the process log.
func (l *Logger) writeBatch(ctx context.Context, batch []Record) {
	l.writeMu.Lock()
	defer l.writeMu.Unlock()

	if len(l.sinks) == 0 {
		for _, r := range batch {
			l.log.Info("audit record", "auditRecord", recordString(r))
		}
		return
	}
	errs := make([]error, len(l.sinks))
	var wg sync.WaitGroup
	for i, s := range l.sinks {
		wg.Go(func() { errs[i] = l.writeSink(ctx, s, batch) })
	}
	wg.Wait()

	failing := 0
	for _, err := range errs {
		if err != nil {
			failing++
			l.addPending(err)
		}
	}
	if failing == len(l.sinks) {
		for _, r := range batch {
			l.drop(r, fmt.Errorf("every audit sink failed: %w", errors.Join(errs...)))
		}
	}
}

// writeSink writes batch to one sink, retrying with backoff unless the error
// says retrying cannot help, and keeps the sink's counters.
func (l *Logger) writeSink(ctx context.Context, s *sinkState, batch []Record) error {
	var err error
	for attempt := 0; ; attempt++ {
		err = safeWrite(ctx, s.sink, batch)
		if err == nil {
			s.written.Add(uint64(len(batch)))
			s.setErr(nil)
			return nil
		}
		s.errs.Inc()
		if isPermanent(err) || attempt >= len(l.backoff) || ctx.Err() != nil {
			break
		}
		l.log.V(1).Info("audit sink write failed; retrying", "sink", s.name, "attempt", attempt+1, "records", len(batch), "error", err.Error())
		t := time.NewTimer(l.backoff[attempt])
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
		}
	}
	failed := failedCount(err, len(batch))
	s.failed.Add(uint64(failed))
	s.lost.Add(float64(failed))
	s.written.Add(uint64(len(batch) - failed))
	s.setErr(err)
	l.noteFailure(s, failed, err)
	return fmt.Errorf("audit sink %s: %w", s.name, err)
}

// noteFailure logs that s did not take records: at once when no line about
// s was written in the last interval, else summed up for logFailures.
func (l *Logger) noteFailure(s *sinkState, records int, err error) {
	s.sumMu.Lock()
	defer s.sumMu.Unlock()
	if s.sumWrites == 0 && time.Since(s.lastLogged) >= l.failureEvery {
		s.lastLogged = time.Now()
		l.log.Error(err, "audit sink did not take records", "sink", s.name, "records", records)
		return
	}
	s.sumRecords += uint64(records)
	s.sumWrites++
	s.sumErr = err
}

// logFailures writes one line per sink with failures not yet logged, once
// an interval has passed since its last line (or at once with force): how
// many records in how many writes, and the last error.
func (l *Logger) logFailures(force bool) {
	for _, s := range l.sinks {
		s.sumMu.Lock()
		if s.sumWrites > 0 && (force || time.Since(s.lastLogged) >= l.failureEvery) {
			l.log.Error(s.sumErr, "audit sink did not take records", "sink", s.name, "records", s.sumRecords,
				"failedWrites", s.sumWrites, "since", time.Since(s.lastLogged).Round(time.Millisecond).String(),
				"summary", true)
			s.sumRecords, s.sumWrites, s.sumErr = 0, 0, nil
			s.lastLogged = time.Now()
		}
		s.sumMu.Unlock()
	}
}

// safeWrite calls s.Write, turning a panic into an error so one bad sink
// cannot take the guard down.
func safeWrite(ctx context.Context, s Sink, batch []Record) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("sink %s panicked: %v", s.Name(), p)
		}
	}()
	return s.Write(ctx, batch)
}

// drop counts r as dropped and writes it to the process log, the last resort.
func (l *Logger) drop(r Record, cause error) {
	l.dropped.Add(1)
	droppedTotal.Inc()
	l.log.Error(cause, "audit record not written to any audit sink; recorded here instead", "auditRecord", recordString(r))
}

// recordString returns r's JSON line without the newline, or a Go rendering
// when r cannot be encoded.
func recordString(r Record) string {
	b, err := marshalLine(r)
	if err != nil {
		return fmt.Sprintf("%+v", r)
	}
	return string(b[:len(b)-1])
}

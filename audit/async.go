package audit

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"
)

// DefaultAsyncDrain is how long an async sink (Kubernetes Events,
// notifications) goes on sending what it buffered once the guard stops; the
// guard's --audit-drain-timeout.
const DefaultAsyncDrain = 5 * time.Second

// asyncBatchTimeout bounds one Write of the inner sink by a worker.
const asyncBatchTimeout = 10 * time.Second

// asyncSink decouples a slow sink (Kubernetes Events: one API call a record)
// from the others: Write hands the batch to a buffer that workers drain at
// the slow sink's pace, so stdout and the file are never held up. When the
// buffer is full the batch fails at once, as a permanent error, and is
// counted as a sink error like any other: the records are in the other
// sinks, never dropped silently.
//
// Close sends what is buffered for at most the drain time, then cancels
// the writes under way and gives up on the rest: a buffer of a thousand
// Events at the Event client's 20 a second would otherwise hold the
// guard's exit for most of a minute, past the 30 s Kubernetes waits before
// it kills the pod. What it gave up on is counted in Close's error.
type asyncSink struct {
	inner   Sink
	batches chan []Record
	drain   time.Duration
	wg      sync.WaitGroup

	ctx    context.Context // canceled when the drain time at Close is over
	cancel context.CancelFunc

	mu        sync.Mutex
	lastErr   error // the latest failure of a worker's write, not yet reported
	failed    int   // records of the failures not yet reported
	abandoned int   // records given up on at Close, never sent
}

// NewAsyncSink wraps inner with a buffer of up to buffer batches and workers
// that write them. At Close the workers go on for at most drain (none when
// drain <= 0) before what is left is given up on.
func NewAsyncSink(inner Sink, buffer, workers int, drain time.Duration) Sink {
	if workers < 1 {
		workers = 1
	}
	ctx, cancel := context.WithCancel(context.Background())
	s := &asyncSink{inner: inner, batches: make(chan []Record, buffer), drain: max(drain, 0), ctx: ctx, cancel: cancel}
	for range workers {
		s.wg.Go(s.work)
	}
	return s
}

func (s *asyncSink) Name() string { return s.inner.Name() }

func (s *asyncSink) work() {
	for b := range s.batches {
		if s.ctx.Err() != nil {
			// Past the drain time: count the rest, send nothing.
			s.mu.Lock()
			s.abandoned += len(b)
			s.mu.Unlock()
			continue
		}
		ctx, cancel := context.WithTimeout(s.ctx, asyncBatchTimeout)
		err := s.inner.Write(ctx, b)
		cancel()
		if err != nil {
			s.mu.Lock()
			s.lastErr = err
			s.failed += failedCount(err, len(b))
			s.mu.Unlock()
		}
	}
}

// Write queues the batch. It reports the failures of earlier batches since
// the last report, if any, as permanent (not to be retried: those batches
// are gone), with how many records they held, so the sink's health still
// shows in the logger's counters.
func (s *asyncSink) Write(_ context.Context, batch []Record) error {
	cp := append([]Record(nil), batch...)
	select {
	case s.batches <- cp:
	default:
		return &partialError{failed: len(batch), permanent: true,
			err: fmt.Errorf("sink %s is behind: %d records not sent to it (they are in the other sinks)", s.inner.Name(), len(batch))}
	}
	s.mu.Lock()
	err, failed := s.lastErr, s.failed
	s.lastErr, s.failed = nil, 0
	s.mu.Unlock()
	if err != nil {
		return &partialError{failed: max(failed, 1), permanent: true, err: fmt.Errorf("earlier batches: %w", err)}
	}
	return nil
}

// Close sends what is buffered, for at most the drain time, then closes the
// inner sink. Records it did not send (given up on, or failed since the
// last Write) make Close return a partialError counting them.
func (s *asyncSink) Close() error {
	close(s.batches)
	done := make(chan struct{})
	go func() {
		s.wg.Wait()
		close(done)
	}()
	t := time.NewTimer(s.drain)
	select {
	case <-done:
		t.Stop()
	case <-t.C:
		s.cancel() // ends the writes under way; the workers skip the rest
		<-done
	}
	s.cancel()

	var errs []error
	s.mu.Lock()
	abandoned, failed, lastErr := s.abandoned, s.failed, s.lastErr
	s.mu.Unlock()
	if n := abandoned + failed; n > 0 {
		msg := fmt.Sprintf("sink %s: %d records not sent at shutdown", s.inner.Name(), n)
		if abandoned > 0 {
			msg += fmt.Sprintf(" (%d still buffered when the drain time of %s ran out)", abandoned, s.drain)
		}
		err := errors.New(msg + "; they are in the other sinks")
		if lastErr != nil {
			err = fmt.Errorf("%s; they are in the other sinks; last failure: %w", msg, lastErr)
		}
		errs = append(errs, &partialError{failed: n, permanent: true, err: err})
	}
	if err := s.inner.Close(); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

package audit

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"
)

// asyncSink decouples a slow sink (Kubernetes Events: one API call a record)
// from the others: Write hands the batch to a buffer that workers drain at
// the slow sink's pace, so stdout and the file are never held up. When the
// buffer is full the batch fails at once, as a permanent error, and is
// counted as a sink error like any other: the records are in the other
// sinks, never dropped silently.
type asyncSink struct {
	inner   Sink
	batches chan []Record
	wg      sync.WaitGroup
	mu      sync.Mutex
	lastErr error
}

// NewAsyncSink wraps inner with a buffer of up to buffer batches and workers
// that write them.
func NewAsyncSink(inner Sink, buffer, workers int) Sink {
	if workers < 1 {
		workers = 1
	}
	s := &asyncSink{inner: inner, batches: make(chan []Record, buffer)}
	for range workers {
		s.wg.Go(s.work)
	}
	return s
}

func (s *asyncSink) Name() string { return s.inner.Name() }

func (s *asyncSink) work() {
	for b := range s.batches {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		err := s.inner.Write(ctx, b)
		cancel()
		s.mu.Lock()
		s.lastErr = err
		s.mu.Unlock()
	}
}

// Write queues the batch. It reports an earlier batch's failure, if any, as
// permanent (not to be retried: that batch is gone), so the sink's health
// still shows in the logger's counters.
func (s *asyncSink) Write(_ context.Context, batch []Record) error {
	cp := append([]Record(nil), batch...)
	select {
	case s.batches <- cp:
	default:
		return &partialError{failed: len(batch), permanent: true,
			err: fmt.Errorf("sink %s is behind: %d records not sent to it (they are in the other sinks)", s.inner.Name(), len(batch))}
	}
	s.mu.Lock()
	err := s.lastErr
	s.lastErr = nil
	s.mu.Unlock()
	if err != nil {
		failed := 1
		var pe *partialError
		if errors.As(err, &pe) && pe.failed > 0 {
			failed = pe.failed
		}
		return &partialError{failed: failed, permanent: true, err: fmt.Errorf("earlier batch: %w", err)}
	}
	return nil
}

// Close writes what is buffered, then closes the inner sink.
func (s *asyncSink) Close() error {
	close(s.batches)
	s.wg.Wait()
	return s.inner.Close()
}

package audit

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"
)

// slowSink blocks every write until release is closed.
type slowSink struct {
	mu      sync.Mutex
	release chan struct{}
	written int
}

func (s *slowSink) Name() string { return "slow" }
func (s *slowSink) Close() error { return nil }
func (s *slowSink) Write(_ context.Context, b []Record) error {
	<-s.release
	s.mu.Lock()
	s.written += len(b)
	s.mu.Unlock()
	return nil
}

func TestAsyncSinkDoesNotHoldUpAndDrainsOnClose(t *testing.T) {
	inner := &slowSink{release: make(chan struct{})}
	s := NewAsyncSink(inner, 16, 2, time.Minute)
	// Every write returns while the inner sink is stuck.
	for range 10 {
		if err := s.Write(context.Background(), []Record{{Type: Drift}}); err != nil {
			t.Fatal(err)
		}
	}
	close(inner.release)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if inner.written != 10 {
		t.Fatalf("written %d, want 10 after Close", inner.written)
	}
}

func TestAsyncSinkFullBufferFails(t *testing.T) {
	inner := &slowSink{release: make(chan struct{})}
	s := NewAsyncSink(inner, 1, 1, time.Minute)
	defer s.Close()
	defer close(inner.release)
	var failed int
	for range 5 {
		if err := s.Write(context.Background(), []Record{{Type: Drift}}); err != nil {
			if !isPermanent(err) {
				t.Fatalf("a full buffer must fail permanently (no retry): %v", err)
			}
			failed++
		}
	}
	if failed == 0 {
		t.Fatal("a full buffer must report the records it could not take")
	}
}

// stuckSink never takes a batch: each Write waits until its context ends,
// as the Event sink does against an API server that does not answer.
type stuckSink struct{ started chan struct{} }

func (s *stuckSink) Name() string { return "stuck" }
func (s *stuckSink) Close() error { return nil }
func (s *stuckSink) Write(ctx context.Context, b []Record) error {
	select {
	case s.started <- struct{}{}:
	default:
	}
	<-ctx.Done()
	return &partialError{failed: len(b), err: ctx.Err()}
}

// TestAsyncSinkCloseDrainDeadline: Close sends what is buffered for at
// most the drain time, then gives up on the rest and counts it.
func TestAsyncSinkCloseDrainDeadline(t *testing.T) {
	for _, tc := range []struct {
		name       string
		stuck      bool
		drain      time.Duration
		wantFailed int // records Close reports not sent
	}{
		{name: "a working sink gets everything", drain: time.Second},
		{name: "a stuck sink is given up on after the drain time", stuck: true, drain: 300 * time.Millisecond, wantFailed: 10},
		{name: "no drain time", stuck: true, drain: 0, wantFailed: 10},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var inner Sink
			var mem *slowSink
			if tc.stuck {
				inner = &stuckSink{started: make(chan struct{}, 1)}
			} else {
				mem = &slowSink{release: make(chan struct{})}
				close(mem.release)
				inner = mem
			}
			s := NewAsyncSink(inner, 16, 1, tc.drain)
			for range 10 {
				if err := s.Write(context.Background(), []Record{{Type: Drift}}); err != nil {
					t.Fatal(err)
				}
			}
			began := time.Now()
			err := s.Close()
			took := time.Since(began)
			if took > tc.drain+2*time.Second {
				t.Errorf("Close took %s with a drain time of %s", took, tc.drain)
			}
			var pe *partialError
			if err != nil {
				got := -1
				if errors.As(err, &pe) {
					got = pe.failed
				}
				if got != tc.wantFailed || !strings.Contains(err.Error(), "not sent at shutdown") {
					t.Errorf("Close: %v (counts %d records), want %d records not sent", err, got, tc.wantFailed)
				}
			} else if tc.wantFailed != 0 {
				t.Errorf("Close returned nil, want %d records not sent", tc.wantFailed)
			}
			if mem != nil && mem.written != 10 {
				t.Errorf("inner sink got %d records, want 10", mem.written)
			}
		})
	}
}

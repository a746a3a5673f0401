package audit

import (
	"context"
	"sync"
	"testing"
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
	s := NewAsyncSink(inner, 16, 2)
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
	s := NewAsyncSink(inner, 1, 1)
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

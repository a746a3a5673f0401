package audit

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
)

// memSink keeps what it is given. delay slows every Write; fail, when set,
// decides the result of each Write (attempt counts from 1); gate, when set,
// holds every Write until it is closed.
type memSink struct {
	name  string
	delay time.Duration
	fail  func(attempt int) error
	gate  chan struct{}

	mu       sync.Mutex
	records  []Record
	attempts int
	closed   bool
}

func (s *memSink) Name() string { return s.name }

func (s *memSink) Write(ctx context.Context, batch []Record) error {
	if s.gate != nil {
		<-s.gate
	}
	if s.delay > 0 {
		time.Sleep(s.delay)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.attempts++
	if s.fail != nil {
		if err := s.fail(s.attempts); err != nil {
			return err
		}
	}
	s.records = append(s.records, batch...)
	return nil
}

func (s *memSink) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
	return nil
}

func (s *memSink) got() []Record {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Record(nil), s.records...)
}

func (s *memSink) isClosed() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.closed
}

// logSpy is a logr.Logger that keeps every line it is given.
type logSpy struct {
	mu    sync.Mutex
	lines []string
}

func (s *logSpy) logger() logr.Logger {
	return funcr.New(func(prefix, args string) {
		s.mu.Lock()
		defer s.mu.Unlock()
		s.lines = append(s.lines, prefix+" "+args)
	}, funcr.Options{Verbosity: 1})
}

// matching returns the lines that contain every one of subs.
func (s *logSpy) matching(subs ...string) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
next:
	for _, l := range s.lines {
		for _, sub := range subs {
			if !strings.Contains(l, sub) {
				continue next
			}
		}
		out = append(out, l)
	}
	return out
}

// startLogger starts l and returns a function that stops it and waits for
// Start to return.
func startLogger(t *testing.T, l *Logger) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- l.Start(ctx) }()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			select {
			case err := <-done:
				if err != nil {
					t.Errorf("Start returned %v", err)
				}
			case <-time.After(10 * time.Second):
				t.Fatal("Start did not return after its context ended")
			}
		})
	}
	t.Cleanup(func() {
		stop()
		if err := l.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return stop
}

// newTestLogger is NewLogger with short retry waits.
func newTestLogger(log logr.Logger, queueSize int, sinks ...Sink) *Logger {
	l := NewLogger(log, queueSize, sinks...)
	l.backoff = []time.Duration{time.Millisecond, 2 * time.Millisecond, 3 * time.Millisecond}
	return l
}

func flush(t *testing.T, l *Logger) error {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	err := l.Flush(ctx)
	if errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Flush did not return: %v", err)
	}
	return err
}

func rec(i int) Record {
	return Record{
		Type:   Drift,
		Object: Object{Group: "apps", Version: "v1", Kind: "Deployment", Namespace: "shop", Name: fmt.Sprintf("web-%03d", i)},
	}
}

func names(rs []Record) []string {
	out := make([]string, len(rs))
	for i, r := range rs {
		out[i] = r.Object.Name
	}
	return out
}

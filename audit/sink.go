package audit

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"

	"gopkg.in/natefinch/lumberjack.v2"
)

// Sink receives batches of records. The Logger calls Write from one goroutine
// at a time per sink; a Sink must still not assume it is the only user of the
// underlying writer. Write returns an error when any record of the batch was
// not written; the Logger then retries the whole batch, so a Sink should
// tolerate seeing a record twice.
type Sink interface {
	Name() string
	Write(ctx context.Context, batch []Record) error
	Close() error
}

// writerSink writes JSON lines to an io.Writer.
type writerSink struct {
	name string
	mu   sync.Mutex
	w    io.Writer
	buf  bytes.Buffer
}

// NewWriterSink returns a Sink that writes each record as one JSON line to w.
// A batch goes to w in a single Write call. Close does not close w: the caller
// owns it (stdout, usually).
func NewWriterSink(name string, w io.Writer) Sink {
	return &writerSink{name: name, w: w}
}

func (s *writerSink) Name() string { return s.name }

func (s *writerSink) Write(_ context.Context, batch []Record) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.buf.Reset()
	var encErrs []error
	for _, r := range batch {
		if err := appendJSONLine(&s.buf, r); err != nil {
			encErrs = append(encErrs, err)
		}
	}
	if s.buf.Len() > 0 {
		if _, err := s.w.Write(s.buf.Bytes()); err != nil {
			return fmt.Errorf("sink %s: write %d records: %w", s.name, len(batch), err)
		}
	}
	if len(encErrs) > 0 {
		// A record that cannot be encoded never will be: retrying is useless.
		return &partialError{failed: len(encErrs), permanent: true,
			err: fmt.Errorf("sink %s: %w", s.name, errors.Join(encErrs...))}
	}
	return nil
}

func (s *writerSink) Close() error { return nil }

// fileSink writes JSON lines to a file that lumberjack rotates.
type fileSink struct {
	mu  sync.Mutex
	lj  *lumberjack.Logger
	buf bytes.Buffer
}

// NewFileSink returns a Sink that writes JSON lines to the file at path,
// rotating it when it would grow past maxSizeMB megabytes (lumberjack's
// default of 100 when maxSizeMB <= 0) and keeping maxBackups rotated files (0
// keeps all). Rotated files are named after the time of rotation, in UTC. The
// file is created with mode 0600, its directory with 0755, on first write; use
// OpenFileSink to find a bad path at start-up instead.
//
// Each record is written whole to one file: a rotation happens between
// records, never inside one.
func NewFileSink(path string, maxSizeMB, maxBackups int) Sink {
	if maxSizeMB < 0 {
		maxSizeMB = 0
	}
	if maxBackups < 0 {
		maxBackups = 0
	}
	return &fileSink{lj: &lumberjack.Logger{
		Filename:   path,
		MaxSize:    maxSizeMB,
		MaxBackups: maxBackups,
		LocalTime:  false,
		Compress:   false,
	}}
}

// OpenFileSink is NewFileSink that also opens (or creates) the file at once,
// so that a path that cannot be opened for writing (a missing folder that
// cannot be made, a file in the way, no permission) is reported when the
// guard starts. A full disk is not: it may be full now and free later, as
// while the guard runs, and is reported by the failing writes.
func OpenFileSink(path string, maxSizeMB, maxBackups int) (Sink, error) {
	if path == "" {
		return nil, errors.New("open audit file: empty path")
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, fmt.Errorf("open audit file %q: %w", path, err)
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return nil, fmt.Errorf("open audit file %q: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return nil, fmt.Errorf("open audit file %q: %w", path, err)
	}
	return NewFileSink(path, maxSizeMB, maxBackups), nil
}

func (s *fileSink) Name() string { return "file" }

func (s *fileSink) Write(_ context.Context, batch []Record) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	var errs []error
	failed := 0
	permanent := true
	for _, r := range batch {
		s.buf.Reset()
		if err := appendJSONLine(&s.buf, r); err != nil {
			errs = append(errs, err)
			failed++
			continue
		}
		// One Write per line: lumberjack rotates before a write that would not
		// fit, so a line never straddles two files.
		if _, err := s.lj.Write(s.buf.Bytes()); err != nil {
			errs = append(errs, fmt.Errorf("write %s record for %s to %s: %w", r.Type, r.Object, s.lj.Filename, err))
			failed++
			permanent = false
		}
	}
	if failed == 0 {
		return nil
	}
	return &partialError{failed: failed, permanent: permanent,
		err: fmt.Errorf("sink file: %d of %d records not written: %w", failed, len(batch), errors.Join(errs...))}
}

func (s *fileSink) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.lj.Close(); err != nil {
		return fmt.Errorf("close audit file %q: %w", s.lj.Filename, err)
	}
	return nil
}

// partialError reports that only some records of a batch failed, and whether
// retrying the batch can help.
type partialError struct {
	failed    int
	permanent bool
	err       error
}

func (e *partialError) Error() string { return e.err.Error() }
func (e *partialError) Unwrap() error { return e.err }

// failedCount returns how many records of a batch of n an error from Write
// stands for.
func failedCount(err error, n int) int {
	var pe *partialError
	if errors.As(err, &pe) && pe.failed > 0 && pe.failed <= n {
		return pe.failed
	}
	return n
}

// isPermanent reports whether retrying a Write that returned err is useless.
func isPermanent(err error) bool {
	var pe *partialError
	return errors.As(err, &pe) && pe.permanent
}

// Package wait is how every test of driftguard waits: it polls a condition
// until it holds, and fails the test with the condition's last answer when
// it does not hold in time. It imports nothing of driftguard, so the unit
// and component tests of any package use it as the end-to-end suites do
// (test/harness imports the whole guard).
//
// A test waits for what it needs, never for a fixed time: a sleep is either
// too short on a loaded machine or too long everywhere else.
package wait

import (
	"errors"
	"testing"
	"time"
)

// The first polls come quickly, so a condition that holds at once costs
// milliseconds; later ones every maxPoll, so a long wait does not load the
// API server it asks.
const (
	firstPoll = 5 * time.Millisecond
	maxPoll   = 50 * time.Millisecond
)

// Eventually calls cond until it returns nil. When timeout has passed and
// cond still returns an error, it fails t with what (what the test waits
// for) and that error.
func Eventually(t testing.TB, timeout time.Duration, what string, cond func() error) {
	t.Helper()
	if err := Until(timeout, cond); err != nil {
		t.Fatalf("%s: not within %s: %v", what, timeout, err)
	}
}

// Until calls cond until it returns nil and returns nil, or returns cond's
// last error once timeout has passed, or at once an error of Stop (what
// waits can no longer come: the process it waits for has exited). It is Eventually for code that has no
// testing.TB at hand (a TestMain, a setup that returns errors).
func Until(timeout time.Duration, cond func() error) error {
	deadline := time.Now().Add(timeout)
	poll := firstPoll
	for {
		err := cond()
		var stop stopError
		if errors.As(err, &stop) {
			return stop.err
		}
		if err == nil || time.Now().After(deadline) {
			return err
		}
		time.Sleep(poll)
		poll = min(2*poll, maxPoll)
	}
}

// Stop marks err as final: Until and Eventually return it at once.
func Stop(err error) error { return stopError{err} }

type stopError struct{ err error }

func (e stopError) Error() string { return e.err.Error() }
func (e stopError) Unwrap() error { return e.err }

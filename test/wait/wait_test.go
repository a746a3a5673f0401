package wait

import (
	"errors"
	"fmt"
	"testing"
	"time"
)

func TestUntilReturnsOnceCondHolds(t *testing.T) {
	calls := 0
	err := Until(time.Minute, func() error {
		if calls++; calls < 4 {
			return fmt.Errorf("call %d", calls)
		}
		return nil
	})
	if err != nil || calls != 4 {
		t.Fatalf("Until: %v after %d calls, want nil after 4", err, calls)
	}
}

func TestUntilReturnsTheLastError(t *testing.T) {
	calls := 0
	err := Until(0, func() error {
		calls++
		return errors.New("not yet")
	})
	if err == nil || err.Error() != "not yet" || calls != 1 {
		t.Fatalf("Until with no time: %v after %d calls, want the condition's error after one", err, calls)
	}
}

func TestUntilStopsAtAStop(t *testing.T) {
	gone := errors.New("gone")
	calls := 0
	err := Until(time.Minute, func() error {
		calls++
		return Stop(gone)
	})
	if err != gone || calls != 1 {
		t.Fatalf("Until: %v after %d calls, want the stopped error after one", err, calls)
	}
}

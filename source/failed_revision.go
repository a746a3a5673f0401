package source

import (
	"errors"
	"fmt"
	"time"

	"github.com/driftguard/driftguard/render"
)

// FailedRevision is a revision of a source that failed to render, or went
// beyond a fetch or render limit, as the Guard's status records it: a
// guard that did not see it fail itself (a new leader, a restarted
// process) gets its error back instead of fetching and rendering it again
// (which could fail the same way, or cost the same time and memory, in
// every process that takes over) until Until, after which the revision is
// tried again.
type FailedRevision struct {
	Revision string
	Message  string    // the error it failed with
	Until    time.Time // when it is tried again
}

// ErrRecordedFailure is wrapped by the error of a revision a Fetch did not
// render because Request.Failed says it failed.
var ErrRecordedFailure = errors.New("the revision failed before")

// recordedError is the error of a FailedRevision.
type recordedError struct {
	msg   string
	until time.Time
}

func (e *recordedError) Error() string {
	return fmt.Sprintf("%s (failed before; tried again at %s, or at once when the revision or the Guard's spec changes or a sync is requested)",
		e.msg, e.until.UTC().Format(time.RFC3339))
}

func (e *recordedError) Is(target error) bool { return target == ErrRecordedFailure }

// ErrFor returns, as a *RenderError, the recorded error when rev is the
// revision that failed; nil otherwise (f nil included).
func (f *FailedRevision) ErrFor(rev string) error {
	if f == nil || f.Revision == "" || f.Revision != rev {
		return nil
	}
	return &render.RenderError{Err: &recordedError{msg: f.Message, until: f.Until}}
}

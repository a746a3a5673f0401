package gitwrite

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/go-logr/logr"
)

// EditFunc changes the tree of a fresh checkout of the branch and returns
// the commit message. It is called again on a new checkout each time the
// push must be retried, so it must derive its change from the checkout
// (not from an earlier call). Returning ErrNoChange ends Update without a
// commit.
type EditFunc func(ctx context.Context, c *Checkout) (message string, err error)

// Options tune Update.
type Options struct {
	// Author of the commit.
	Author Signature
	// Depth of the clone: 1 for the newest commit only, 0 for the whole
	// history (to resolve older revisions).
	Depth int
	// Attempts bounds how often the edit is applied and pushed; default 4.
	Attempts int
	// Log receives a line for every retry.
	Log logr.Logger
}

// Result is what Update pushed.
type Result struct {
	// SHA is the new commit; empty with ErrNoChange.
	SHA string
	// Base is the commit it was made on (its parent).
	Base string
	// Attempts counts the pushes tried.
	Attempts int
}

// Update clones the branch, applies edit, commits and pushes. When the push
// fails because the branch moved on the remote in the meantime, it clones
// the new head, applies edit again and retries, up to o.Attempts times.
func Update(ctx context.Context, r Remote, o Options, edit EditFunc) (Result, error) {
	attempts := o.Attempts
	if attempts <= 0 {
		attempts = 4
	}
	log := o.Log
	if log.GetSink() == nil {
		log = logr.Discard()
	}
	for attempt := 1; ; attempt++ {
		c, err := Clone(ctx, r, o.Depth)
		if err != nil {
			return Result{Attempts: attempt}, err
		}
		res := Result{Base: c.Base(), Attempts: attempt}
		msg, err := edit(ctx, c)
		if err != nil {
			return res, err
		}
		if res.SHA, err = c.Commit(o.Author, msg); err != nil {
			return res, err
		}
		pushErr := c.Push(ctx)
		if pushErr == nil {
			return res, nil
		}
		moved, err := c.moved(ctx)
		if err != nil || !moved {
			return res, pushErr
		}
		if attempt == attempts {
			return res, fmt.Errorf("branch %s kept moving on the remote; gave up after %d attempts: %w", r.Branch, attempts, pushErr)
		}
		log.Info("branch moved on the remote; applying the change again on its new head", "branch", r.Branch, "attempt", attempt, "base", c.Base())
		select {
		case <-ctx.Done():
			return res, errors.Join(pushErr, ctx.Err())
		case <-time.After(time.Duration(attempt) * 100 * time.Millisecond):
		}
	}
}

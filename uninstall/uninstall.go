// Package uninstall is how the guard tells, after something it keeps (its
// webhook configurations, its certificate Secret) was deleted, whether it
// is being uninstalled and must leave it deleted: helm uninstall deletes
// the guard's Deployment and those objects in one go, in no fixed order.
package uninstall

import (
	"context"
	"time"
)

// DefaultGrace is how long After waits when given no grace.
const DefaultGrace = 2 * time.Second

// After waits grace (DefaultGrace when not positive), time for the rest of
// an uninstall to reach the API server, then asks gone whether the guard
// is being uninstalled. It is true when ctx ends first (the guard is
// stopping: nothing is to be restored), false when gone is nil.
func After(ctx context.Context, grace time.Duration, gone func(ctx context.Context) bool) bool {
	if gone == nil {
		return false
	}
	if grace <= 0 {
		grace = DefaultGrace
	}
	t := time.NewTimer(grace)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return true
	case <-t.C:
	}
	return gone(ctx)
}

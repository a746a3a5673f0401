package uninstall

import (
	"context"
	"testing"
	"time"
)

func TestAfter(t *testing.T) {
	ended, cancel := context.WithCancel(context.Background())
	cancel()
	tests := []struct {
		name      string
		ctx       context.Context
		grace     time.Duration
		gone      func(context.Context) bool
		want      bool
		wantAsked bool
	}{
		{"no question: never uninstalling", context.Background(), time.Millisecond, nil, false, false},
		{"the Deployment is gone", context.Background(), time.Millisecond, func(context.Context) bool { return true }, true, true},
		{"the Deployment is there", context.Background(), time.Millisecond, func(context.Context) bool { return false }, false, true},
		{"stopping: nothing to restore, not asked", ended, time.Hour, func(context.Context) bool { return false }, true, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			asked := false
			gone := tt.gone
			if gone != nil {
				gone = func(ctx context.Context) bool { asked = true; return tt.gone(ctx) }
			}
			if got := After(tt.ctx, tt.grace, gone); got != tt.want {
				t.Errorf("After = %v, want %v", got, tt.want)
			}
			if asked != tt.wantAsked {
				t.Errorf("asked = %v, want %v", asked, tt.wantAsked)
			}
		})
	}
}

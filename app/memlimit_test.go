package app

import (
	"math"
	"runtime/debug"
	"strings"
	"testing"

	"github.com/go-logr/logr"
)

func TestSetMemoryLimit(t *testing.T) {
	t.Cleanup(func() { debug.SetMemoryLimit(math.MaxInt64) })
	t.Setenv("GOMEMLIMIT", "")
	tests := []struct {
		flag    string
		want    int64
		wantErr string
	}{
		{flag: "128Mi", want: 128 << 20},
		{flag: "1G", want: 1_000_000_000},
		{flag: "lots", wantErr: `--memory-limit "lots"`},
		{flag: "-5Mi", wantErr: "must be positive"},
	}
	for _, tt := range tests {
		t.Run(tt.flag, func(t *testing.T) {
			got, err := SetMemoryLimit(tt.flag, logr.Discard())
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil || got != tt.want || debug.SetMemoryLimit(-1) != tt.want {
				t.Fatalf("got %d, %v; runtime limit %d; want %d", got, err, debug.SetMemoryLimit(-1), tt.want)
			}
		})
	}
}

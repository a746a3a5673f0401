package app

import (
	"fmt"
	"os"
	"runtime/debug"
	"strconv"
	"strings"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/api/resource"
)

// defaultGCPercent is the garbage collector's target when GOGC is unset.
const defaultGCPercent = 30

// cgroupMemoryMax is where cgroup v2 publishes the container's memory limit.
const cgroupMemoryMax = "/sys/fs/cgroup/memory.max"

// SetMemoryLimit sets GOGC to 30 unless the environment sets it, and the
// Go runtime's soft memory limit, which makes the
// garbage collector work harder as the heap nears it and return freed memory
// to the system sooner. flag (--memory-limit, a quantity such as 128Mi) wins;
// else GOMEMLIMIT, which the runtime has already read; else 90% of the
// container's cgroup limit, when there is one. It returns the limit set, 0
// when none.
func SetMemoryLimit(flag string, log logr.Logger) (int64, error) {
	if os.Getenv("GOGC") == "" {
		// The guard's heap is mostly long-lived (desired and live objects):
		// a smaller margin above it costs little CPU and keeps the resident
		// size near what the guard holds.
		debug.SetGCPercent(defaultGCPercent)
	}
	var limit int64
	switch {
	case flag != "":
		q, err := resource.ParseQuantity(flag)
		if err != nil {
			return 0, fmt.Errorf("--memory-limit %q: %w", flag, err)
		}
		if limit = q.Value(); limit <= 0 {
			return 0, fmt.Errorf("--memory-limit %q: must be positive", flag)
		}
	case os.Getenv("GOMEMLIMIT") != "":
		return debug.SetMemoryLimit(-1), nil
	default:
		raw, err := os.ReadFile(cgroupMemoryMax)
		if err != nil {
			return 0, nil // not in a cgroup v2 container
		}
		max, err := strconv.ParseInt(strings.TrimSpace(string(raw)), 10, 64)
		if err != nil {
			return 0, nil // "max": no limit
		}
		limit = max / 10 * 9
	}
	debug.SetMemoryLimit(limit)
	log.Info("Go memory limit set", "bytes", limit)
	return limit, nil
}

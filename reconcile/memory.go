package reconcile

import "runtime/debug"

// bigApply is the number of objects written in one reconcile above which
// the memory the apply used is handed back to the system at once.
const bigApply = 1000

// releaseMemory returns the heap the apply of written objects left behind
// (requests, responses) to the system. The Go runtime would keep it for
// minutes, so a guard that applied 10,000 objects once would look, to its
// container's memory accounting, as big as at the peak of that apply.
func releaseMemory(written int) {
	if written >= bigApply {
		debug.FreeOSMemory()
	}
}

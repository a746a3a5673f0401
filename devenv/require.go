package devenv

import (
	"fmt"
	"os"
)

// TB is the part of testing.TB RequireBinaries uses (devenv is part of the
// guard's binary, which does not link the testing package).
type TB interface {
	Helper()
	Fatal(args ...any)
	Skip(args ...any)
}

// RequireBinaries ends a test that needs a control plane when the tools
// cache lacks its binaries (the simulated cluster's too, when simulated):
// a failure under CI=true, where they must be there, else a skip.
func RequireBinaries(t TB, simulated bool) {
	t.Helper()
	missing := MissingBinaries("", simulated)
	if len(missing) == 0 {
		return
	}
	msg := fmt.Sprintf("%v missing in %s; run tools/build.sh", missing, DefaultBinDir())
	if os.Getenv("CI") == "true" {
		t.Fatal(msg)
	}
	t.Skip(msg)
}

// Package install tests the guard as it runs in a cluster: the real
// driftguard binary as processes of the test (one or two replicas), started,
// killed and restarted, against a real kube-apiserver and etcd, a real Git
// server on loopback, and real kubectl. Certificate rotation under load,
// self-protection of the webhook configurations, the webhook's failure
// policy with the guard down, and the hand-over between two replicas.
package install

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/driftguard/driftguard/devenv"
	"github.com/driftguard/driftguard/test/harness"
)

// bin is the driftguard binary built for this run.
var bin string

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	if missing := devenv.MissingBinaries("", false); len(missing) > 0 {
		fmt.Fprintf(os.Stderr, "control-plane binaries missing in %s: %v (run tools/build.sh)\n", devenv.DefaultBinDir(), missing)
		return 1
	}
	if os.Getenv("DRIFTGUARD_RACE") == "" {
		var err error
		if bin, err = harness.Binary(); err != nil {
			fmt.Fprintln(os.Stderr, "build driftguard:", err)
			return 1
		}
		return m.Run()
	}
	// DRIFTGUARD_RACE=1: the guard processes run with the race detector.
	dir, err := os.MkdirTemp("", "driftguard-install-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	bin = filepath.Join(dir, "driftguard")
	build := exec.Command("go", "build", "-race", "-o", bin, "./cmd/driftguard")
	build.Dir = "../.."
	if out, err := build.CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "build driftguard: %v\n%s", err, out)
		return 1
	}
	return m.Run()
}

// Package cli runs the driftguard command's cluster verbs (get, reconcile,
// suspend, resume, tree, events, logs, completion) as a person would: the
// built binary against a real kube-apiserver and etcd, with the guard
// reconciling Guards from a real Git server on loopback.
package cli

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"testing"

	"github.com/driftguard/driftguard/app"
	"github.com/driftguard/driftguard/test/harness"
)

var (
	h   *harness.Harness
	bin string
	// guardNS is the guard's own namespace (its inventories).
	guardNS = app.DefaultOptions().Namespace
)

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	var err error
	if bin, err = harness.Binary(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	h, err = harness.Start(harness.Options{})
	if err != nil {
		fmt.Fprintln(os.Stderr, "start harness:", err)
		return 1
	}
	defer h.Stop()
	return m.Run()
}

// cli runs the driftguard binary against the test cluster and returns its
// standard output, standard error and exit code.
func cli(t *testing.T, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), "KUBECONFIG="+h.Cluster.AdminKubeconfig)
	var out, errOut harness.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	var ee *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &ee):
		code = ee.ExitCode()
	default:
		t.Fatalf("run driftguard %v: %v", args, err)
	}
	return out.String(), errOut.String(), code
}

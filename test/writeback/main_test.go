// Package writeback drives `driftguard adopt` and `driftguard rollback`, as
// the built binary, against a real kube-apiserver, a real Git server on
// loopback and the guard itself: what they commit, and what the guard's
// normal loop then does with it.
package writeback

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/driftguard/driftguard/app"
	"github.com/driftguard/driftguard/test/harness"
)

var (
	h *harness.Harness
	// bin is the driftguard binary built for the suite.
	bin string
)

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	var err error
	if bin, err = harness.Binary(); err != nil {
		fmt.Fprintln(os.Stderr, "build driftguard:", err)
		return 1
	}
	h, err = harness.Start(harness.Options{Guard: func(o *app.Options) { o.BreakGlassGroups = []string{"sre"} }})
	if err != nil {
		fmt.Fprintln(os.Stderr, "start harness:", err)
		return 1
	}
	defer h.Stop()
	return m.Run()
}

// driftguard runs the binary and returns its stdout and stderr.
func driftguard(t *testing.T, args ...string) (string, string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	return stdout.String(), stderr.String(), err
}

// gitClone clones a repository with the git binary, isolated from the
// user's configuration, and returns the folder.
func gitClone(t *testing.T, url string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "clone")
	gitRun(t, "", "clone", "--quiet", url, dir)
	return dir
}

func gitRun(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	home := t.TempDir()
	cmd.Env = append(os.Environ(), "HOME="+home, "XDG_CONFIG_HOME="+home, "GIT_CONFIG_NOSYSTEM=1", "GIT_TERMINAL_PROMPT=0")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %s: %v: %s", strings.Join(args, " "), err, out)
	}
	return strings.TrimSpace(string(out))
}

package source

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"

	"github.com/driftguard/driftguard/render"
)

// gitIn runs git in dir with stdin and returns its trimmed output.
func gitIn(t *testing.T, dir, stdin string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "GIT_TERMINAL_PROMPT=0")
	cmd.Stdin = strings.NewReader(stdin)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %s: %v: %s", strings.Join(args, " "), err, out)
	}
	return strings.TrimSpace(string(out))
}

// wantRenderLimit checks that err is a render error naming flag.
func wantRenderLimit(t *testing.T, err error, flag string) {
	t.Helper()
	var re *render.RenderError
	var le *render.LimitError
	if !errors.As(err, &re) || !errors.As(err, &le) || le.Flag != flag {
		t.Fatalf("err = %v, want a render error naming --%s", err, flag)
	}
}

// TestGitBomb: a commit whose tree names one folder ten times at each of
// nine levels (a billion paths from a few kilobytes of tree objects) fails
// its render at --render-max-files, quickly, whether the Guard's path is a
// plain folder or a kustomization (which lists the whole tree); so does
// reading the policy files of the commit.
func TestGitBomb(t *testing.T) {
	gs := newGitServer(t)
	repo, err := gs.NewRepo("bomb")
	if err != nil {
		t.Fatal(err)
	}
	dir := repo.Dir
	blob := gitIn(t, dir, "", "hash-object", "-w", "--stdin")
	entries := func(mode, kind, hash, prefix string) string {
		var b strings.Builder
		for i := range 10 {
			fmt.Fprintf(&b, "%s %s %s\t%s%d.yaml\n", mode, kind, hash, prefix, i)
		}
		return b.String()
	}
	tree := gitIn(t, dir, entries("100644", "blob", blob, "f"), "mktree")
	for range 8 {
		tree = gitIn(t, dir, strings.ReplaceAll(entries("040000", "tree", tree, "d"), ".yaml", ""), "mktree")
	}
	cm := gitIn(t, dir, configMap("web"), "hash-object", "-w", "--stdin")
	kustomization := gitIn(t, dir, "resources: [cm.yaml]\n", "hash-object", "-w", "--stdin")
	app := gitIn(t, dir, fmt.Sprintf("100644 blob %s\tcm.yaml\n100644 blob %s\tkustomization.yaml\n", cm, kustomization), "mktree")
	root := gitIn(t, dir, fmt.Sprintf("040000 tree %s\tapp\n040000 tree %s\tbomb\n100644 blob %s\tpolicy.rego\n", app, tree, blob), "mktree")
	commit := gitIn(t, dir, "", "commit-tree", root, "-m", "a billion paths")
	gitIn(t, dir, "", "push", "--quiet", "origin", commit+":refs/heads/main")

	f := NewGitFetcher(t.TempDir(), logr.Discard())
	for _, path := range []string{".", "app"} {
		start := time.Now()
		rev, snap, err := f.Fetch(t.Context(), Request{URL: gs.url("bomb"), Ref: "main", Path: path})
		t.Logf("path %s: %.200v (%s)", path, err, time.Since(start).Round(time.Millisecond))
		if rev != commit || snap != nil {
			t.Fatalf("path %s: revision %q, snapshot %v; want the commit refused", path, rev, snap)
		}
		wantRenderLimit(t, err, "render-max-files")
	}
	_, err = f.Files(Request{URL: gs.url("bomb")}, commit, ".", func(name string) bool { return strings.HasSuffix(name, ".rego") })
	var le *render.LimitError
	if !errors.As(err, &le) || le.Flag != "render-max-files" {
		t.Fatalf("policy files of the commit: %v, want the limit of --render-max-files", err)
	}
}

// allocated runs f and returns the bytes it allocated (all goroutines).
func allocated(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// zeros writes a file of n zero bytes in the working tree of repo (git
// reads it from disk; a quarter of a megabyte in the pack for 256 MiB).
func zeros(t *testing.T, dir, name string, n int64) {
	t.Helper()
	f, err := os.Create(dir + "/" + name)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(n); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestLargeBlobNotInflated: a Git object beyond --git-max-object-size is
// refused while the pack arrives, before go-git inflates it to index the
// pack; one within it but beyond --render-max-file-size is refused by its
// size when rendered, without being inflated.
func TestLargeBlobNotInflated(t *testing.T) {
	gs := newGitServer(t)
	f := NewGitFetcher(t.TempDir(), logr.Discard())
	push := func(name string, size int64) string {
		repo, err := gs.NewRepo(name)
		if err != nil {
			t.Fatal(err)
		}
		zeros(t, repo.Dir, "big.yaml", size)
		mustPush(t, repo, map[string]string{"cm.yaml": configMap("web")}, "a large file")
		return gs.url(name)
	}

	url := push("huge", 256<<20)
	var err error
	alloc := allocated(func() { _, _, err = f.Fetch(t.Context(), Request{URL: url, Ref: "main"}) })
	var le *render.LimitError
	if !errors.As(err, &le) || le.Flag != "git-max-object-size" {
		t.Fatalf("fetch of a 256 MiB file: %v, want the limit of --git-max-object-size", err)
	}
	if alloc > 32<<20 {
		t.Errorf("refusing the 256 MiB file allocated %d MiB: it was inflated", alloc>>20)
	}

	url = push("large", 40<<20)
	_, _, err = f.Fetch(t.Context(), Request{URL: url, Ref: "main"})
	wantRenderLimit(t, err, "render-max-file-size")
	// Rendered again from the cache (other options): no fetch, and the
	// file is refused by its size before it is read.
	alloc = allocated(func() {
		_, _, err = f.Fetch(t.Context(), Request{URL: url, Ref: "main", Render: render.RenderOptions{Vars: map[string]string{"X": "1"}}})
	})
	wantRenderLimit(t, err, "render-max-file-size")
	if alloc > 16<<20 {
		t.Errorf("rendering a revision with a 40 MiB file allocated %d MiB: the file was inflated", alloc>>20)
	}
}

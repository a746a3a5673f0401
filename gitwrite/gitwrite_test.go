package gitwrite

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/driftguard/driftguard/gitserver"
	"github.com/driftguard/driftguard/render"
	"github.com/driftguard/driftguard/source"
)

func startServer(t *testing.T) *gitserver.Server {
	t.Helper()
	srv, err := gitserver.Start(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Close() })
	return srv
}

// newRepo creates a repository holding files in one commit and returns it
// with that commit's SHA.
func newRepo(t *testing.T, srv *gitserver.Server, name string, files map[string]string) (*gitserver.Repo, string) {
	t.Helper()
	r, err := srv.NewRepo(name)
	if err != nil {
		t.Fatal(err)
	}
	for p, c := range files {
		if err := r.WriteFile(p, c); err != nil {
			t.Fatal(err)
		}
	}
	sha, err := r.CommitAndPush("initial")
	if err != nil {
		t.Fatal(err)
	}
	return r, sha
}

// git runs the git binary, isolated from the user's configuration.
func runGit(t *testing.T, dir string, args ...string) string {
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

// clone makes a fresh clone with the git binary, to check what the remote holds.
func clone(t *testing.T, url string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "clone")
	runGit(t, "", "clone", "--quiet", url, dir)
	return dir
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

var author = Signature{Name: "Sam Oncall", Email: "sam@example.invalid"}

func TestUpdateCommitsAndPushes(t *testing.T) {
	srv := startServer(t)
	repo, _ := newRepo(t, srv, "shop", map[string]string{"apps/cm.yaml": "a: 1\n", "README.md": "shop\n"})
	if err := repo.WriteFile("apps/run.sh", "#!/bin/sh\n"); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(filepath.Join(repo.Dir, "apps", "run.sh"), 0o755); err != nil {
		t.Fatal(err)
	}
	initial, err := repo.CommitAndPush("script")
	if err != nil {
		t.Fatal(err)
	}
	remote := Remote{URL: srv.URL("shop"), Branch: "main"}
	res, err := Update(context.Background(), remote, Options{Author: author, Depth: 1}, func(_ context.Context, c *Checkout) (string, error) {
		b, err := c.Tree().ReadFile("apps/cm.yaml")
		if err != nil {
			return "", err
		}
		if string(b) != "a: 1\n" {
			t.Errorf("read %q", b)
		}
		if err := c.Tree().WriteFile("apps/cm.yaml", []byte("a: 2\n")); err != nil {
			return "", err
		}
		if err := c.Tree().WriteFile("apps/run.sh", []byte("#!/bin/sh\necho hi\n")); err != nil {
			return "", err
		}
		if err := c.Tree().WriteFile("apps/new/deep.yaml", []byte("b: 1\n")); err != nil {
			return "", err
		}
		if err := c.Tree().Remove("README.md"); err != nil {
			return "", err
		}
		diff, err := c.Diff(context.Background())
		if err != nil {
			return "", err
		}
		for _, want := range []string{"-a: 1", "+a: 2", "+b: 1", "-shop"} {
			if !strings.Contains(diff, want) {
				t.Errorf("diff lacks %q:\n%s", want, diff)
			}
		}
		return "change a\n\nbody", nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if res.Base != initial || res.Attempts != 1 || len(res.SHA) != 40 {
		t.Fatalf("result %+v, want base %s after 1 attempt", res, initial)
	}
	dir := clone(t, srv.URL("shop"))
	if head := runGit(t, dir, "rev-parse", "HEAD"); head != res.SHA {
		t.Fatalf("remote head %s, pushed %s", head, res.SHA)
	}
	if parent := runGit(t, dir, "rev-parse", "HEAD^"); parent != initial {
		t.Fatalf("parent %s, want %s", parent, initial)
	}
	if got := runGit(t, dir, "log", "-1", "--format=%an <%ae>|%s|%b"); got != "Sam Oncall <sam@example.invalid>|change a|body" {
		t.Fatalf("commit %q", got)
	}
	if got := readFile(t, filepath.Join(dir, "apps", "cm.yaml")); got != "a: 2\n" {
		t.Fatalf("apps/cm.yaml %q", got)
	}
	if got := readFile(t, filepath.Join(dir, "apps", "new", "deep.yaml")); got != "b: 1\n" {
		t.Fatalf("apps/new/deep.yaml %q", got)
	}
	if _, err := os.Stat(filepath.Join(dir, "README.md")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("README.md not removed: %v", err)
	}
	if mode := runGit(t, dir, "ls-files", "-s", "apps/run.sh"); !strings.HasPrefix(mode, "100755 ") {
		t.Fatalf("run.sh lost its executable mode: %s", mode)
	}
	if fsck := runGit(t, dir, "fsck", "--strict"); strings.Contains(fsck, "error") {
		t.Fatalf("git fsck: %s", fsck)
	}
}

func TestUpdateRetriesWhenTheBranchMoved(t *testing.T) {
	srv := startServer(t)
	repo, _ := newRepo(t, srv, "race", map[string]string{"a.yaml": "a: 1\n", "b.yaml": "b: 1\n"})
	var concurrent string
	calls := 0
	res, err := Update(context.Background(), Remote{URL: srv.URL("race"), Branch: "main"}, Options{Author: author, Depth: 1}, func(_ context.Context, c *Checkout) (string, error) {
		calls++
		if calls == 1 {
			// Someone else pushes between our clone and our push.
			if err := repo.WriteFile("b.yaml", "b: 2\n"); err != nil {
				return "", err
			}
			var err error
			if concurrent, err = repo.CommitAndPush("concurrent"); err != nil {
				return "", err
			}
		}
		return "ours", c.Tree().WriteFile("a.yaml", []byte("a: 2\n"))
	})
	if err != nil {
		t.Fatal(err)
	}
	if calls != 2 || res.Attempts != 2 || res.Base != concurrent {
		t.Fatalf("edit called %d times, result %+v; want 2 attempts on top of %s", calls, res, concurrent)
	}
	dir := clone(t, srv.URL("race"))
	if got := runGit(t, dir, "log", "--format=%s"); got != "ours\nconcurrent\ninitial" {
		t.Fatalf("history %q", got)
	}
	if a, b := readFile(t, filepath.Join(dir, "a.yaml")), readFile(t, filepath.Join(dir, "b.yaml")); a != "a: 2\n" || b != "b: 2\n" {
		t.Fatalf("a.yaml %q, b.yaml %q: both changes must be kept", a, b)
	}
}

func TestUpdateGivesUpWhenTheBranchKeepsMoving(t *testing.T) {
	srv := startServer(t)
	repo, _ := newRepo(t, srv, "busy", map[string]string{"a.yaml": "a: 1\n"})
	n := 0
	_, err := Update(context.Background(), Remote{URL: srv.URL("busy"), Branch: "main"}, Options{Author: author, Depth: 1, Attempts: 2}, func(_ context.Context, c *Checkout) (string, error) {
		n++
		if err := repo.WriteFile("other.yaml", strings.Repeat("x", n)); err != nil {
			return "", err
		}
		if _, err := repo.CommitAndPush("someone else"); err != nil {
			return "", err
		}
		return "ours", c.Tree().WriteFile("a.yaml", []byte("a: 2\n"))
	})
	if err == nil || !strings.Contains(err.Error(), "kept moving") || n != 2 {
		t.Fatalf("after %d attempts: %v; want to give up after 2", n, err)
	}
}

func TestUpdateWithoutChange(t *testing.T) {
	srv := startServer(t)
	_, initial := newRepo(t, srv, "same", map[string]string{"a.yaml": "a: 1\n"})
	res, err := Update(context.Background(), Remote{URL: srv.URL("same"), Branch: "main"}, Options{Author: author, Depth: 1}, func(_ context.Context, c *Checkout) (string, error) {
		return "same", c.Tree().WriteFile("a.yaml", []byte("a: 1\n"))
	})
	if !errors.Is(err, ErrNoChange) || res.SHA != "" || res.Base != initial {
		t.Fatalf("result %+v, error %v; want ErrNoChange", res, err)
	}
	if head := runGit(t, clone(t, srv.URL("same")), "rev-parse", "HEAD"); head != initial {
		t.Fatalf("a commit was pushed: %s", head)
	}
}

// TestAuth pushes through an HTTPS front that demands credentials, as a
// Git host does; the same front over plain HTTP never gets them.
func TestAuth(t *testing.T) {
	srv := startServer(t)
	newRepo(t, srv, "private", map[string]string{"a.yaml": "a: 1\n"})
	var plainRequests atomic.Int32
	var demand http.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.TLS == nil {
			plainRequests.Add(1)
		}
		user, pass, basic := r.BasicAuth()
		if (basic && user == "sam" && pass == "s3cret") || r.Header.Get("Authorization") == "Bearer tok3n" {
			srv.Handler().ServeHTTP(w, r)
			return
		}
		w.Header().Set("WWW-Authenticate", `Basic realm="git"`)
		http.Error(w, "authentication required", http.StatusUnauthorized)
	})
	tlsHandler.Store(&demand)
	plain := httptest.NewServer(demand)
	defer plain.Close()
	url := tlsFront.URL + "/private.git"
	plainURL := plain.URL + "/private.git"
	tests := []struct {
		name    string
		auth    *source.Auth
		wantErr string
	}{
		{"none", nil, "authentication required"},
		{"wrong password", &source.Auth{Username: "sam", Password: "nope"}, "authentication required"},
		{"basic", &source.Auth{Username: "sam", Password: "s3cret"}, ""},
		{"token", &source.Auth{BearerToken: "tok3n"}, ""},
		{"ssh key on https", &source.Auth{SSHKey: []byte("key")}, "cannot use an SSH key"},
	}
	for i, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Update(context.Background(), Remote{URL: url, Branch: "main", Auth: tc.auth}, Options{Author: author, Depth: 1}, func(_ context.Context, c *Checkout) (string, error) {
				return "change", c.Tree().WriteFile("a.yaml", []byte(strings.Repeat("a", i+1)))
			})
			if tc.wantErr == "" && err != nil {
				t.Fatal(err)
			}
			if tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)) {
				t.Fatalf("error %v, want %q", err, tc.wantErr)
			}
		})
	}
	plainTests := []struct {
		name string
		url  string
		auth *source.Auth
		want string
	}{
		{"basic auth over http", plainURL, &source.Auth{Username: "sam", Password: "s3cret"}, "the username and password (basic auth) would go in clear text to http://"},
		{"token over http", plainURL, &source.Auth{BearerToken: "tok3n"}, "the bearerToken would go in clear text to http://"},
		{"user information over http", strings.Replace(plainURL, "http://", "http://sam:s3cret@", 1), nil, "the URL's user information would go in clear text to http://"},
	}
	for _, tc := range plainTests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Update(context.Background(), Remote{URL: tc.url, Branch: "main", Auth: tc.auth}, Options{Author: author, Depth: 1}, func(_ context.Context, c *Checkout) (string, error) {
				return "change", c.Tree().WriteFile("a.yaml", []byte("plain"))
			})
			if !errors.Is(err, source.ErrPlainHTTPCredentials) || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "s3cret") || strings.Contains(err.Error(), "tok3n") {
				t.Fatalf("error %v, want ErrPlainHTTPCredentials saying %q", err, tc.want)
			}
			if n := plainRequests.Load(); n != 0 {
				t.Fatalf("the plain HTTP front was asked %d times", n)
			}
		})
	}
}

func TestResolveBranch(t *testing.T) {
	srv := startServer(t)
	repo, sha := newRepo(t, srv, "refs", map[string]string{"a.yaml": "a: 1\n"})
	if err := repo.Tag("v1.0.0"); err != nil {
		t.Fatal(err)
	}
	url := srv.URL("refs")
	tests := []struct {
		ref, want, wantErr string
	}{
		{ref: "main", want: "main"},
		{ref: "refs/heads/main", want: "main"},
		{ref: "", want: "main"},
		{ref: "v1.0.0", wantErr: "is a tag"},
		{ref: "refs/tags/v1.0.0", wantErr: "is a tag"},
		{ref: sha, wantErr: "is a commit SHA"},
		{ref: "refs/pull/1/head", wantErr: "is not a branch"},
		{ref: "release", wantErr: `no branch "release"`},
	}
	for _, tc := range tests {
		t.Run(tc.ref, func(t *testing.T) {
			got, err := ResolveBranch(context.Background(), url, tc.ref, nil)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("ResolveBranch(%q) = %q, %v; want error %q", tc.ref, got, err, tc.wantErr)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("ResolveBranch(%q) = %q, %v; want %q", tc.ref, got, err, tc.want)
			}
		})
	}
}

func TestRollback(t *testing.T) {
	srv := startServer(t)
	repo, rev1 := newRepo(t, srv, "history", map[string]string{
		"apps/a.yaml": "a: 1\n", "apps/sub/b.yaml": "b: 1\n", "other/x.yaml": "x: 1\n",
	})
	if err := repo.Tag("good"); err != nil {
		t.Fatal(err)
	}
	for p, c := range map[string]string{"apps/a.yaml": "a: 2\n", "apps/c.yaml": "c: 1\n", "other/x.yaml": "x: 2\n"} {
		if err := repo.WriteFile(p, c); err != nil {
			t.Fatal(err)
		}
	}
	if err := repo.Remove("apps/sub"); err != nil {
		t.Fatal(err)
	}
	rev2, err := repo.CommitAndPush("rev2")
	if err != nil {
		t.Fatal(err)
	}
	if err := repo.WriteFile("new/only.yaml", "n: 1\n"); err != nil {
		t.Fatal(err)
	}
	rev3, err := repo.CommitAndPush("rev3 adds a folder")
	if err != nil {
		t.Fatal(err)
	}
	remote := Remote{URL: srv.URL("history"), Branch: "main"}
	for _, rev := range []string{rev1, rev1[:8], "good", "HEAD~2"} {
		t.Run(rev, func(t *testing.T) {
			c, err := Clone(context.Background(), remote, 0)
			if err != nil {
				t.Fatal(err)
			}
			target, err := c.Rollback(rev, "apps/")
			if err != nil {
				t.Fatal(err)
			}
			if target.Hash.String() != rev1 {
				t.Fatalf("%s resolved to %s, want %s", rev, target.Hash, rev1)
			}
		})
	}
	res, err := Update(context.Background(), remote, Options{Author: author}, func(_ context.Context, c *Checkout) (string, error) {
		target, err := c.Rollback(rev1[:10], "apps")
		if err != nil {
			return "", err
		}
		return RollbackNote{Guard: "shop", Dir: "apps", Target: target, Base: c.Base(), By: "sam"}.Message(), nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if res.Base != rev3 {
		t.Fatalf("base %s, want %s", res.Base, rev3)
	}
	dir := clone(t, remote.URL)
	if got, want := runGit(t, dir, "rev-parse", "HEAD:apps"), runGit(t, dir, "rev-parse", rev1+":apps"); got != want {
		t.Fatalf("apps is tree %s, want rev1's %s", got, want)
	}
	if got, want := runGit(t, dir, "rev-parse", "HEAD:other"), runGit(t, dir, "rev-parse", rev2+":other"); got != want {
		t.Fatalf("other changed: tree %s, want %s", got, want)
	}
	if got := readFile(t, filepath.Join(dir, "new", "only.yaml")); got != "n: 1\n" {
		t.Fatalf("new/only.yaml %q", got)
	}
	msg := runGit(t, dir, "log", "-1", "--format=%B")
	for _, want := range []string{"roll back apps to " + rev1[:7], "Restores apps to its state at " + rev1 + " (initial), on top of " + rev3[:7], "Rolled-back-by: sam", "Guard: shop"} {
		if !strings.Contains(msg, want) {
			t.Errorf("message lacks %q:\n%s", want, msg)
		}
	}

	t.Run("revision without the folder", func(t *testing.T) {
		c, err := Clone(context.Background(), remote, 0)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.Rollback(rev1, "new"); err == nil || !strings.Contains(err.Error(), "has no new") {
			t.Fatalf("error %v", err)
		}
		if _, err := c.Rollback("nosuchrev", "apps"); err == nil || !strings.Contains(err.Error(), `revision "nosuchrev" not found`) {
			t.Fatalf("error %v", err)
		}
	})
	t.Run("already there", func(t *testing.T) {
		_, err := Update(context.Background(), remote, Options{Author: author}, func(_ context.Context, c *Checkout) (string, error) {
			_, err := c.Rollback(rev1, "apps")
			return "again", err
		})
		if !errors.Is(err, ErrNoChange) {
			t.Fatalf("error %v, want ErrNoChange", err)
		}
	})
}

// TestTreeFSRenders renders a checkout's tree with package render, as adopt does.
func TestTreeFSRenders(t *testing.T) {
	srv := startServer(t)
	newRepo(t, srv, "render", map[string]string{
		"apps/all.yaml":       "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: shop\n---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cfg\n  namespace: shop\n",
		"apps/.hidden/x.yaml": "not: rendered\n",
		"apps/notes.txt":      "ignored\n",
	})
	c, err := Clone(context.Background(), Remote{URL: srv.URL("render"), Branch: "main"}, 1)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Tree().WriteFile("apps/z/more.json", []byte(`{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "json"}}`)); err != nil {
		t.Fatal(err)
	}
	fsys, err := c.Tree().FS()
	if err != nil {
		t.Fatal(err)
	}
	objs, err := render.Render(fsys, "apps", render.Source{URL: "u", Revision: c.Base()})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, o := range objs {
		got = append(got, o.Key.Display()+"@"+o.Source.Path+":"+itoa(o.Source.Line))
	}
	want := "Namespace shop@apps/all.yaml:1 ConfigMap shop/cfg@apps/all.yaml:6 ConfigMap json@apps/z/more.json:1"
	if strings.Join(got, " ") != want {
		t.Fatalf("rendered %q, want %q", strings.Join(got, " "), want)
	}
}

func itoa(i int) string { return strconv.Itoa(i) }

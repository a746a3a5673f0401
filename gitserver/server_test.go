package gitserver

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func startServer(t *testing.T) *Server {
	t.Helper()
	s, err := Start(t.TempDir())
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return s
}

// cloneAndRead clones url with the system git into a fresh folder.
func cloneAndRead(t *testing.T, s *Server, url string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "clone")
	if _, err := runGit(t.Context(), s.home, t.TempDir(), "clone", "--quiet", url, dir); err != nil {
		t.Fatalf("clone: %v", err)
	}
	return dir
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("read: %v", err)
	}
	return string(b)
}

func TestPushAndClone(t *testing.T) {
	s := startServer(t)
	r, err := s.NewRepo("shop")
	if err != nil {
		t.Fatalf("NewRepo: %v", err)
	}
	if got, want := s.URL("shop"), "http://"+s.ln.Addr().String()+"/shop.git"; got != want {
		t.Fatalf("URL = %q, want %q", got, want)
	}
	if err := r.WriteFile("apps/web/cm.yaml", "v: 1\n"); err != nil {
		t.Fatal(err)
	}
	sha1, err := r.CommitAndPush("first")
	if err != nil {
		t.Fatalf("CommitAndPush: %v", err)
	}
	if len(sha1) != 40 {
		t.Fatalf("sha %q is not a full SHA", sha1)
	}

	dir := cloneAndRead(t, s, s.URL("shop"))
	if got := readFile(t, filepath.Join(dir, "apps/web/cm.yaml")); got != "v: 1\n" {
		t.Fatalf("cloned content = %q", got)
	}
	head, err := runGit(t.Context(), s.home, dir, "rev-parse", "HEAD")
	if err != nil || head != sha1 {
		t.Fatalf("clone HEAD = %q (%v), want %s", head, err, sha1)
	}
	branch, err := runGit(t.Context(), s.home, dir, "rev-parse", "--abbrev-ref", "HEAD")
	if err != nil || branch != "main" {
		t.Fatalf("clone branch = %q (%v), want main", branch, err)
	}

	// A second push with an edit, a removal and a copied folder.
	src := t.TempDir()
	if err := os.MkdirAll(filepath.Join(src, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(src, "sub", "x.yaml"), []byte("x: 1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := r.CopyDir(src, "copied"); err != nil {
		t.Fatalf("CopyDir: %v", err)
	}
	if err := r.Remove("apps/web/cm.yaml"); err != nil {
		t.Fatalf("Remove: %v", err)
	}
	sha2, err := r.CommitAndPush("second")
	if err != nil {
		t.Fatalf("second push: %v", err)
	}
	if sha2 == sha1 {
		t.Fatal("second commit has the same SHA")
	}
	if err := r.Tag("v1"); err != nil {
		t.Fatalf("Tag: %v", err)
	}

	dir = cloneAndRead(t, s, s.URL("shop.git"))
	if got := readFile(t, filepath.Join(dir, "copied/sub/x.yaml")); got != "x: 1\n" {
		t.Fatalf("copied content = %q", got)
	}
	if _, err := os.Stat(filepath.Join(dir, "apps/web/cm.yaml")); !os.IsNotExist(err) {
		t.Fatalf("removed file still present: %v", err)
	}
	tags, err := runGit(t.Context(), s.home, dir, "ls-remote", "--tags", s.URL("shop"))
	if err != nil || !strings.Contains(tags, sha2+"\trefs/tags/v1") {
		t.Fatalf("ls-remote tags = %q (%v)", tags, err)
	}
}

func TestErrors(t *testing.T) {
	s := startServer(t)
	r, err := s.NewRepo("a")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		run  func() error
		want string
	}{
		{"duplicate repo", func() error { _, err := s.NewRepo("a"); return err }, "already exists"},
		{"bad repo name", func() error { _, err := s.NewRepo("../x"); return err }, "invalid name"},
		{"write outside", func() error { return r.WriteFile("../x", "") }, "outside the repository"},
		{"remove missing", func() error { return r.Remove("nope") }, "remove nope"},
		{"push nothing", func() error { return r.Push() }, "push:"}, // no commit yet: git's stderr is included
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.run()
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v, want containing %q", err, tt.want)
			}
		})
	}
}

func TestOnPush(t *testing.T) {
	s, err := Start(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	pushed := make(chan string, 4)
	s.OnPush(func(url string) { pushed <- url })
	r, err := s.NewRepo("hooked")
	if err != nil {
		t.Fatal(err)
	}
	if err := r.WriteFile("a.txt", "a"); err != nil {
		t.Fatal(err)
	}
	if _, err := r.CommitAndPush("a"); err != nil {
		t.Fatal(err)
	}
	select {
	case got := <-pushed:
		if got != s.URL("hooked") {
			t.Fatalf("OnPush got %q, want %q", got, s.URL("hooked"))
		}
	default:
		t.Fatal("OnPush was not called after the push returned")
	}
}

func TestPauseResume(t *testing.T) {
	s := startServer(t)
	r, err := s.NewRepo("outage")
	if err != nil {
		t.Fatal(err)
	}
	if err := r.WriteFile("a.yaml", "v: 1\n"); err != nil {
		t.Fatal(err)
	}
	if _, err := r.CommitAndPush("first"); err != nil {
		t.Fatal(err)
	}
	if err := s.Pause(); err != nil {
		t.Fatalf("Pause: %v", err)
	}
	if _, err := runGit(t.Context(), s.home, t.TempDir(), "ls-remote", s.URL("outage")); err == nil {
		t.Fatal("ls-remote succeeded while the server was paused")
	}
	if err := s.Pause(); err == nil {
		t.Fatal("second Pause did not fail")
	}
	if err := s.Resume(); err != nil {
		t.Fatalf("Resume: %v", err)
	}
	if got := readFile(t, filepath.Join(cloneAndRead(t, s, s.URL("outage")), "a.yaml")); got != "v: 1\n" {
		t.Fatalf("after Resume: a.yaml = %q", got)
	}
}

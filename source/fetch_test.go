package source

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/go-logr/logr"

	"github.com/driftguard/driftguard/gitserver"
	"github.com/driftguard/driftguard/render"
)

// countingServer serves the gitserver's handler, counts pack requests and
// records every request, so a test can tell a ref listing from a fetch of
// objects.
type countingServer struct {
	*gitserver.Server
	http  *httptest.Server
	packs atomic.Int64

	mu       sync.Mutex
	requests []string // "METHOD /path?query"
}

// takeRequests returns the requests since the last call.
func (c *countingServer) takeRequests() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := c.requests
	c.requests = nil
	return out
}

func (c *countingServer) url(repo string) string { return c.http.URL + "/" + repo + ".git" }

func newGitServer(t *testing.T) *countingServer {
	t.Helper()
	s, err := gitserver.Start(t.TempDir())
	if err != nil {
		t.Fatalf("start git server: %v", err)
	}
	c := &countingServer{Server: s}
	c.http = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, "/git-upload-pack") {
			c.packs.Add(1)
		}
		c.mu.Lock()
		c.requests = append(c.requests, r.Method+" "+r.URL.RequestURI())
		c.mu.Unlock()
		s.Handler().ServeHTTP(w, r)
	}))
	t.Cleanup(func() {
		c.http.Close()
		if err := s.Close(); err != nil {
			t.Errorf("close git server: %v", err)
		}
	})
	return c
}

func configMap(name string) string {
	return fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: %s\n  namespace: shop\n", name)
}

// privateRepo is the repository "private", served over TLS to the user
// deploy with the password s3cret only; it answers the server, the
// repository and its URL.
func privateRepo(t *testing.T) (*countingServer, *gitserver.Repo, string) {
	t.Helper()
	gs := newGitServer(t)
	front := httptest.NewTLSServer(gs.Handler())
	t.Cleanup(front.Close)
	repo, err := gs.NewRepo("private")
	if err != nil {
		t.Fatal(err)
	}
	gs.Private("private", "deploy", "s3cret")
	return gs, repo, front.URL + "/private.git"
}

func mustPush(t *testing.T, r *gitserver.Repo, files map[string]string, msg string) string {
	t.Helper()
	for p, c := range files {
		if err := r.WriteFile(p, c); err != nil {
			t.Fatal(err)
		}
	}
	sha, err := r.CommitAndPush(msg)
	if err != nil {
		t.Fatal(err)
	}
	return sha
}

func names(s *render.Snapshot) []string {
	var out []string
	for _, o := range s.Objects {
		out = append(out, o.Key.Name)
	}
	return out
}

func TestFetch(t *testing.T) {
	gs := newGitServer(t)
	repo, err := gs.NewRepo("shop")
	if err != nil {
		t.Fatal(err)
	}
	url := gs.url("shop")
	sha1 := mustPush(t, repo, map[string]string{
		"apps/web/cm.yaml": configMap("web"),
		"apps/db/cm.yaml":  configMap("db"),
		"README.md":        "hello",
	}, "first")
	if err := repo.Tag("v1"); err != nil {
		t.Fatal(err)
	}

	f := NewGitFetcher(t.TempDir(), logr.Discard())
	ctx := t.Context()

	rev, snap, err := f.Fetch(ctx, Request{URL: url, Ref: "main", Path: "apps"})
	if err != nil {
		t.Fatalf("fetch: %v", err)
	}
	if rev != sha1 || snap.Revision != sha1 || snap.URL != url {
		t.Fatalf("revision %s, snapshot %s %s; want %s", rev, snap.URL, snap.Revision, sha1)
	}
	if got := strings.Join(names(snap), ","); got != "db,web" {
		t.Fatalf("objects = %s", got)
	}
	web, ok := snap.Get(render.ObjectKey{Kind: "ConfigMap", Namespace: "shop", Name: "web"})
	if !ok || web.Source != (render.Source{URL: url, Revision: sha1, Path: "apps/web/cm.yaml", Line: 1}) {
		t.Fatalf("web = %+v, %v", web, ok)
	}

	// Unchanged remote: the same snapshot, and no objects fetched.
	packs := gs.packs.Load()
	rev2, snap2, err := f.Fetch(ctx, Request{URL: url, Ref: "main", Path: "apps"})
	if err != nil || rev2 != sha1 || snap2 != snap {
		t.Fatalf("second fetch = %s %p %v, want %s %p", rev2, snap2, err, sha1, snap)
	}
	if n := gs.packs.Load() - packs; n != 0 {
		t.Fatalf("unchanged fetch made %d pack requests", n)
	}

	// A new commit: a new revision with new objects.
	sha2 := mustPush(t, repo, map[string]string{"apps/web/cm2.yaml": configMap("web2")}, "second")
	rev3, snap3, err := f.Fetch(ctx, Request{URL: url, Ref: "main", Path: "apps"})
	if err != nil || rev3 != sha2 {
		t.Fatalf("third fetch = %s %v, want %s", rev3, err, sha2)
	}
	if got := strings.Join(names(snap3), ","); got != "db,web,web2" {
		t.Fatalf("objects = %s", got)
	}

	tests := []struct {
		name    string
		req     Request
		wantRev string
		want    string
	}{
		{"remote HEAD", Request{URL: url}, sha2, "db,web,web2"},
		{"full ref name", Request{URL: url, Ref: "refs/heads/main", Path: "."}, sha2, "db,web,web2"},
		{"tag", Request{URL: url, Ref: "v1", Path: "apps"}, sha1, "db,web"},
		{"commit SHA", Request{URL: url, Ref: sha1, Path: "apps/web"}, sha1, "web"},
		{"subfolder", Request{URL: url, Ref: "main", Path: "apps/db/"}, sha2, "db"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// A fresh cache, so that every ref is really fetched.
			for _, fetcher := range []*GitFetcher{f, NewGitFetcher(t.TempDir(), logr.Discard())} {
				rev, snap, err := fetcher.Fetch(ctx, tt.req)
				if err != nil {
					t.Fatalf("fetch: %v", err)
				}
				if rev != tt.wantRev || snap.Revision != tt.wantRev {
					t.Fatalf("revision = %s, want %s", rev, tt.wantRev)
				}
				if got := strings.Join(names(snap), ","); got != tt.want {
					t.Fatalf("objects = %s, want %s", got, tt.want)
				}
			}
		})
	}
}

func TestFetchErrors(t *testing.T) {
	gs := newGitServer(t)
	repo, err := gs.NewRepo("bad")
	if err != nil {
		t.Fatal(err)
	}
	url := gs.url("bad")
	mustPush(t, repo, map[string]string{"cm.yaml": configMap("a")}, "good")
	badSHA := mustPush(t, repo, map[string]string{"cm.yaml": configMap("a") + "---\nkind: [\n"}, "bad")
	if _, err := gs.NewRepo("empty"); err != nil {
		t.Fatal(err)
	}

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := "http://" + ln.Addr().String() + "/x.git"
	ln.Close()

	f := NewGitFetcher(t.TempDir(), logr.Discard())
	t.Run("render error keeps the revision", func(t *testing.T) {
		for range 2 { // the second time from the cache
			rev, snap, err := f.Fetch(t.Context(), Request{URL: url, Ref: "main"})
			var re *render.RenderError
			if !errors.As(err, &re) || rev != badSHA || snap != nil {
				t.Fatalf("fetch = %s %v %v, want %s and a RenderError", rev, snap, err, badSHA)
			}
			if re.Path != "cm.yaml" || re.Line != 7 {
				t.Fatalf("render error at %s:%d: %v", re.Path, re.Line, err)
			}
		}
	})

	fetchErrors := []struct {
		name string
		req  Request
		want string
	}{
		{"closed port", Request{URL: closed, Ref: "main"}, "connection refused"},
		{"unknown ref", Request{URL: url, Ref: "nope"}, `reference "nope" not found`},
		{"missing repository", Request{URL: gs.url("missing")}, "list references"},
		{"empty repository", Request{URL: gs.url("empty")}, "remote repository is empty"},
	}
	for _, tt := range fetchErrors {
		t.Run(tt.name, func(t *testing.T) {
			_, snap, err := f.Fetch(t.Context(), tt.req)
			var fe *FetchError
			if !errors.As(err, &fe) || snap != nil || fe.URL != tt.req.URL {
				t.Fatalf("err = %v (%T), want *FetchError", err, err)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v, want containing %q", err, tt.want)
			}
		})
	}

	t.Run("missing path", func(t *testing.T) {
		rev, _, err := f.Fetch(t.Context(), Request{URL: url, Ref: "main", Path: "nope/x"})
		var re *render.RenderError
		if !errors.As(err, &re) || re.Path != "nope/x" || rev != badSHA {
			t.Fatalf("fetch = %s %v, want RenderError naming nope/x", rev, err)
		}
	})
}

func TestFetchConcurrent(t *testing.T) {
	gs := newGitServer(t)
	f := NewGitFetcher(t.TempDir(), logr.Discard())
	var urls []string
	for i := range 3 {
		name := fmt.Sprintf("r%d", i)
		repo, err := gs.NewRepo(name)
		if err != nil {
			t.Fatal(err)
		}
		mustPush(t, repo, map[string]string{"cm.yaml": configMap(name)}, "first")
		urls = append(urls, gs.url(name))
	}
	var wg sync.WaitGroup
	errs := make(chan error, 12)
	for i := range 12 {
		wg.Go(func() {
			u := urls[i%len(urls)]
			_, snap, err := f.Fetch(t.Context(), Request{URL: u})
			if err == nil && len(snap.Objects) != 1 {
				err = fmt.Errorf("%s: %d objects", u, len(snap.Objects))
			}
			errs <- err
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
}

// TestFetchUnchangedListsOnly shows that a Fetch of an unchanged revision
// costs one ref listing and no upload-pack POST, and a SHA ref not even that.
func TestFetchUnchangedListsOnly(t *testing.T) {
	gs := newGitServer(t)
	repo, err := gs.NewRepo("quiet")
	if err != nil {
		t.Fatal(err)
	}
	url := gs.url("quiet")
	sha := mustPush(t, repo, map[string]string{"cm.yaml": configMap("a")}, "first")
	if err := repo.Tag("v1.0.0"); err != nil {
		t.Fatal(err)
	}
	const list, pack = "GET /quiet.git/info/refs?service=git-upload-pack", "POST /quiet.git/git-upload-pack"
	listing := []string{list}
	// The first fetch: resolve lists the refs, then the fetch session lists
	// them again and POSTs its wants.
	fetching := []string{list, list, pack}

	tests := []struct {
		name        string
		req         Request
		first, next []string
	}{
		{"branch", Request{URL: url, Ref: "main"}, fetching, listing},
		{"semver", Request{URL: url, SemVer: "^1"}, fetching, listing},
		// No listing to resolve a SHA, but git http-backend refuses wants by
		// SHA, so the fetch falls back to fetching every ref.
		{"commit SHA", Request{URL: url, Ref: sha}, fetching, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := NewGitFetcher(t.TempDir(), logr.Discard())
			gs.takeRequests()
			for i, want := range [][]string{tt.first, tt.next, tt.next} {
				rev, snap, err := f.Fetch(t.Context(), tt.req)
				if err != nil || rev != sha || len(snap.Objects) != 1 {
					t.Fatalf("fetch %d = %s %v", i, rev, err)
				}
				if got := gs.takeRequests(); !slices.Equal(got, want) {
					t.Fatalf("fetch %d made %q, want %q", i, got, want)
				}
			}
		})
	}
}

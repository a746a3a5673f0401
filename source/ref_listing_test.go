package source

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-logr/logr"
)

// TestListingReused: Fetches with a ListingMaxAge share one ref listing of
// the remote; a push (ForgetListings) makes the next Fetch list again and
// see the pushed revision; a Fetch without ListingMaxAge always lists.
func TestListingReused(t *testing.T) {
	gs := newGitServer(t)
	repo, err := gs.NewRepo("fleet")
	if err != nil {
		t.Fatal(err)
	}
	url := gs.url("fleet")
	first := mustPush(t, repo, map[string]string{"apps/a/cm.yaml": configMap("a"), "apps/b/cm.yaml": configMap("b")}, "first")
	const list = "GET /fleet.git/info/refs?service=git-upload-pack"
	f := NewGitFetcher(t.TempDir(), logr.Discard())
	fetch := func(path string, maxAge time.Duration, want string) []string {
		t.Helper()
		rev, snap, err := f.Fetch(t.Context(), Request{URL: url, Ref: "main", Path: path, ListingMaxAge: maxAge})
		if err != nil || rev != want || len(snap.Objects) != 1 {
			t.Fatalf("fetch %s = %s %v, want %s", path, rev, err, want)
		}
		return gs.takeRequests()
	}

	gs.takeRequests()
	fetch("apps/a", time.Hour, first)
	// The second Guard of the repository: no request at all (the commit is
	// in the cache already).
	if got := fetch("apps/b", time.Hour, first); len(got) != 0 {
		t.Fatalf("a fetch within the listing's age made %q", got)
	}

	second := mustPush(t, repo, map[string]string{"apps/a/cm.yaml": configMap("a2")}, "second")
	// Within its age the listing stands for the remote (the push has not
	// been announced).
	if got := fetch("apps/a", time.Hour, first); len(got) != 0 {
		t.Fatalf("a fetch within the listing's age made %q", got)
	}
	// The push notification, with the URL spelled differently.
	f.ForgetListings([]string{strings.ToUpper(url[:len("http://127.0.0.1")]) + url[len("http://127.0.0.1"):len(url)-len(".git")]})
	if got := fetch("apps/a", time.Hour, second); len(got) == 0 || got[0] != list {
		t.Fatalf("the first fetch after a push made %q, want a listing first", got)
	}
	if got := fetch("apps/b", time.Hour, second); len(got) != 0 {
		t.Fatalf("a fetch within the new listing's age made %q", got)
	}
	// No ListingMaxAge: a listing every time.
	for range 2 {
		if got := fetch("apps/b", 0, second); len(got) != 1 || got[0] != list {
			t.Fatalf("a fetch without ListingMaxAge made %q, want one listing", got)
		}
	}
}

// TestListingSince: a Fetch with ListingSince resolves with a listing that
// began at or after it, however old, and lists the remote itself when the
// kept listing began before it; a push (ForgetListings) still makes the
// next Fetch list.
func TestListingSince(t *testing.T) {
	gs := newGitServer(t)
	repo, err := gs.NewRepo("queued")
	if err != nil {
		t.Fatal(err)
	}
	url := gs.url("queued")
	first := mustPush(t, repo, map[string]string{"apps/a/cm.yaml": configMap("a"), "apps/b/cm.yaml": configMap("b")}, "first")
	const list = "GET /queued.git/info/refs?service=git-upload-pack"
	f := NewGitFetcher(t.TempDir(), logr.Discard())
	fetch := func(path string, since time.Time, want string) []string {
		t.Helper()
		rev, snap, err := f.Fetch(t.Context(), Request{URL: url, Ref: "main", Path: path, ListingSince: since})
		if err != nil || rev != want || len(snap.Objects) != 1 {
			t.Fatalf("fetch %s = %s %v, want %s", path, rev, err, want)
		}
		return gs.takeRequests()
	}

	gs.takeRequests()
	queued := time.Now() // both Guards queued before the first listing
	fetch("apps/a", queued, first)
	if got := fetch("apps/b", queued, first); len(got) != 0 {
		t.Fatalf("a fetch queued before the kept listing began made %q", got)
	}

	second := mustPush(t, repo, map[string]string{"apps/a/cm.yaml": configMap("a2")}, "second")
	// Queued after the kept listing began (the push was not announced):
	// the remote is asked, and the pushed revision found.
	if got := fetch("apps/a", time.Now(), second); len(got) == 0 || got[0] != list {
		t.Fatalf("a fetch queued after the kept listing made %q, want a listing first", got)
	}
	// A push notification drops the listing, whatever ListingSince says.
	third := mustPush(t, repo, map[string]string{"apps/b/cm.yaml": configMap("b3")}, "third")
	f.ForgetListings([]string{url})
	if got := fetch("apps/b", queued, third); len(got) == 0 || got[0] != list {
		t.Fatalf("the first fetch after a push made %q, want a listing first", got)
	}
}

// TestListingNotSharedAcrossCredentials: a listing made with credentials is
// never what a Fetch with other credentials, or none, resolves with: each
// lists the remote itself, and the server refuses those without the
// credentials.
func TestListingNotSharedAcrossCredentials(t *testing.T) {
	_, repo, url := privateRepo(t)
	head := mustPush(t, repo, map[string]string{"apps/cm.yaml": configMap("a")}, "first")
	f := NewGitFetcher(t.TempDir(), logr.Discard())
	owner := &Auth{Username: "deploy", Password: "s3cret"}
	if rev, _, err := f.Fetch(t.Context(), Request{URL: url, Ref: "main", Path: "apps", Auth: owner, ListingMaxAge: time.Hour}); err != nil || rev != head {
		t.Fatalf("fetch with the credentials = %s %v", rev, err)
	}
	for _, auth := range []*Auth{nil, {Username: "deploy", Password: "guess"}, {BearerToken: "s3cret"}} {
		rev, snap, err := f.Fetch(t.Context(), Request{URL: url, Ref: "main", Path: "apps", Auth: auth, ListingMaxAge: time.Hour})
		if err == nil || rev != "" || snap != nil {
			t.Fatalf("fetch with %v = %s %v %v, want the server's refusal", auth != nil, rev, snap, err)
		}
		if !IsAuthError(err) {
			t.Fatalf("fetch with other credentials: %v, want an authentication error", err)
		}
	}
}

// TestListingForgottenWhileListing: a listing that began before a push
// notification is returned to its caller but not kept for the next.
func TestListingForgottenWhileListing(t *testing.T) {
	var l refListing
	calls := 0
	listing := []*plumbing.Reference{plumbing.NewHashReference("refs/heads/main", plumbing.NewHash(strings.Repeat("a", 40)))}
	list := func() ([]*plumbing.Reference, error) {
		calls++
		if calls == 1 {
			l.forget() // the push arrives while the remote answers
		}
		return listing, nil
	}
	for want := 1; want <= 3; want++ {
		refs, err := l.get(time.Hour, time.Time{}, list)
		if err != nil || len(refs) != 1 {
			t.Fatalf("get = %v %v", refs, err)
		}
		// The first listing is not kept; the second is, and serves the third.
		if wantCalls := min(want, 2); calls != wantCalls {
			t.Fatalf("after get %d: %d listings, want %d", want, calls, wantCalls)
		}
	}
}

// TestObjectCachesOfIdleRepositoriesEmptied: only the maxWarmRepos
// repositories used last keep decoded objects; one used again reads its
// pack again and fetches nothing.
func TestObjectCachesOfIdleRepositoriesEmptied(t *testing.T) {
	gs := newGitServer(t)
	f := NewGitFetcher(t.TempDir(), logr.Discard())
	type fetched struct {
		url string
		rev plumbing.Hash
	}
	var repos []fetched
	for i := range maxWarmRepos + 2 {
		name := fmt.Sprintf("r%d", i)
		repo, err := gs.NewRepo(name)
		if err != nil {
			t.Fatal(err)
		}
		mustPush(t, repo, map[string]string{"cm.yaml": configMap(name)}, "first")
		rev, _, err := f.Fetch(t.Context(), Request{URL: gs.url(name), Ref: "main"})
		if err != nil {
			t.Fatalf("fetch %s: %v", name, err)
		}
		repos = append(repos, fetched{gs.url(name), plumbing.NewHash(rev)})
	}
	cached := func(i int) bool {
		f.mu.Lock()
		rr := f.repos[Request{URL: repos[i].url}.CacheKey()]
		f.mu.Unlock()
		_, ok := rr.objects.Get(repos[i].rev)
		return ok
	}
	for i := range repos {
		if want := i >= len(repos)-maxWarmRepos; cached(i) != want {
			t.Fatalf("repository %d of %d keeps its commit decoded: %v, want %v", i, len(repos), !want, want)
		}
	}
	packs := gs.packs.Load()
	rev, snap, err := f.Fetch(t.Context(), Request{URL: repos[0].url, Ref: "main"})
	if err != nil || plumbing.NewHash(rev) != repos[0].rev || len(snap.Objects) != 1 {
		t.Fatalf("fetch of an idle repository = %s %v", rev, err)
	}
	if n := gs.packs.Load() - packs; n != 0 {
		t.Fatalf("an idle repository fetched %d packs again", n)
	}
}

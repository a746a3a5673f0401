package source

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"

	"github.com/driftguard/driftguard/render"
)

// TestFetchFailedRevision: a revision the Guard's status says failed is
// neither fetched nor rendered by a Fetcher that has no outcome of its own
// for it (a new leader): its recorded error comes back. Another revision,
// or a Fetcher that rendered it itself, is not affected.
func TestFetchFailedRevision(t *testing.T) {
	gs := newGitServer(t)
	repo, err := gs.NewRepo("shop")
	if err != nil {
		t.Fatal(err)
	}
	sha := mustPush(t, repo, map[string]string{"apps/cm.yaml": configMap("web")}, "first")
	url := gs.url("shop")
	until := time.Date(2026, 12, 3, 13, 0, 0, 0, time.UTC)
	failed := &FailedRevision{Revision: sha, Message: "render apps at " + sha[:7] + ": apps/cm.yaml:1: broken", Until: until}

	// A new process: the record holds, nothing is fetched.
	f := NewGitFetcher(t.TempDir(), logr.Discard())
	packs := gs.packs.Load()
	rev, snap, err := f.Fetch(t.Context(), Request{URL: url, Ref: "main", Path: "apps", Failed: failed})
	var re *render.RenderError
	if rev != sha || snap != nil || !errors.Is(err, ErrRecordedFailure) || !errors.As(err, &re) ||
		err.Error() != failed.Message+" (failed before; tried again at 2026-12-03T13:00:00Z, or at once when the revision or the Guard's spec changes or a sync is requested)" {
		t.Fatalf("fetch = %s, %v, %v; want the recorded error", rev, snap != nil, err)
	}
	if gs.packs.Load() != packs {
		t.Fatal("the failed revision was fetched")
	}

	// The record of another revision does not hold.
	if _, snap, err := f.Fetch(t.Context(), Request{URL: url, Ref: "main", Path: "apps", Failed: &FailedRevision{Revision: strings.Repeat("0", 40), Message: "x"}}); err != nil || len(snap.Objects) != 1 {
		t.Fatalf("fetch with another revision's record: %v", err)
	}
	// Having rendered it, the Fetcher trusts its own outcome.
	if _, snap, err := f.Fetch(t.Context(), Request{URL: url, Ref: "main", Path: "apps", Failed: failed}); err != nil || len(snap.Objects) != 1 {
		t.Fatalf("fetch of a revision the Fetcher rendered itself: %v", err)
	}
}

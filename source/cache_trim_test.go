package source

import (
	"fmt"
	"testing"

	"github.com/go-logr/logr"
)

// TestFetchCacheBounded: a Guard follows a branch (or pins each commit by
// SHA) through many pushes; the cache of the repository never holds more
// than --git-cache-max-packs packs, every fetch still returns the commit
// asked for, and an old commit is fetched again after the cache was
// emptied. Without a bound every fetched commit stays (the control case).
func TestFetchCacheBounded(t *testing.T) {
	const commits = 9
	gs := newGitServer(t)
	for _, tc := range []struct {
		name     string
		maxPacks int
		bySHA    bool
		// wantMax is the most packs the cache may hold after any fetch;
		// wantLast the packs after the last one.
		wantMax, wantLast int
	}{
		{name: "branch", maxPacks: 4, wantMax: 4, wantLast: (commits-1)%4 + 1},
		{name: "pinned SHA", maxPacks: 4, bySHA: true, wantMax: 4},
		{name: "no bound to speak of keeps every commit", maxPacks: 1000, wantMax: commits, wantLast: commits},
	} {
		t.Run(tc.name, func(t *testing.T) {
			name := fmt.Sprintf("bounded-%d-%t", tc.maxPacks, tc.bySHA)
			repo, err := gs.NewRepo(name)
			if err != nil {
				t.Fatal(err)
			}
			url := gs.url(name)
			f := NewGitFetcher(t.TempDir(), logr.Discard())
			o := DefaultFetchOptions()
			o.AllowLocal = true
			o.MaxCachePacks = tc.maxPacks
			f.SetOptions(o)

			var shas []string
			most := 0
			for i := range commits {
				sha := mustPush(t, repo, map[string]string{"cm.yaml": configMap(fmt.Sprintf("cm-%03d", i))}, fmt.Sprintf("commit %d", i))
				shas = append(shas, sha)
				req := Request{URL: url, Ref: "main"}
				if tc.bySHA {
					req.Ref = sha
				}
				rev, snap, err := f.Fetch(t.Context(), req)
				if err != nil || rev != sha {
					t.Fatalf("fetch %d: %s, %v; want %s", i, rev, err, sha)
				}
				if got := names(snap); len(got) != 1 || got[0] != fmt.Sprintf("cm-%03d", i) {
					t.Fatalf("fetch %d rendered %v", i, got)
				}
				packs := packCount(f.remote(req).fs)
				most = max(most, packs)
				if packs > tc.wantMax {
					t.Fatalf("after fetch %d the cache holds %d packs, want at most %d", i, packs, tc.wantMax)
				}
			}
			rr := f.remote(Request{URL: url})
			if tc.wantLast > 0 && packCount(rr.fs) != tc.wantLast {
				t.Errorf("after %d fetches the cache holds %d packs, want %d", commits, packCount(rr.fs), tc.wantLast)
			}
			t.Logf("%d commits: at most %d packs, %d bytes at the end", commits, most, dirSize(f.cacheRepoDir(rr.key)))

			// The first commit, long gone from a bounded cache, is fetched again.
			rev, snap, err := f.Fetch(t.Context(), Request{URL: url, Ref: shas[0]})
			if err != nil || rev != shas[0] || names(snap)[0] != "cm-000" {
				t.Fatalf("fetch of the first commit again: %s, %v", rev, err)
			}
		})
	}
}

package source

import (
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/go-git/go-billy/v5"
)

// The Git cache of a repository takes a shallow fetch of every new commit a
// Guard asks for, each written as a pack of its own holding the commit's
// whole tree, and nothing ever removed one: after a thousand pushes it held
// a thousand copies of the repository. go-git cannot repack a shallow
// repository (its repack walks every parent), and the cache needs nothing
// but the commits the Guards ask for next, which a fetch brings whole in
// any case. So a cache that holds --git-cache-max-packs packs is emptied
// before the next fetch of a new commit, which takes only that commit, as
// at start-up. Renders of earlier commits are kept in memory
// (RenderCache), so no Guard reads the cache for them again.

// cacheRepoDir is the folder of the cache repository of key (a
// Request.CacheKey).
func (f *GitFetcher) cacheRepoDir(key string) string {
	return filepath.Join(f.cacheDir, key[:32]+".git")
}

// packCount returns how many packs the repository in fsys holds (what a
// failed fetch left half-written, tmp_*, is not counted).
func packCount(fsys billy.Filesystem) int {
	entries, err := fsys.ReadDir(path.Join("objects", "pack"))
	if err != nil {
		return 0
	}
	n := 0
	for _, e := range entries {
		if strings.HasSuffix(e.Name(), ".pack") && !strings.HasPrefix(e.Name(), "tmp_") {
			n++
		}
	}
	return n
}

// trimCache empties rr's cache repository when it holds MaxCachePacks
// packs or more, and opens it again empty. The caller holds rr.mu and is
// about to fetch a commit the cache does not have.
func (f *GitFetcher) trimCache(rr *remoteRepo, u string) error {
	if packCount(rr.fs) < f.opts.MaxCachePacks {
		return nil
	}
	return f.emptyCache(rr, u, fmt.Sprintf("--%s=%d reached", FlagGitCacheMaxPacks, f.opts.MaxCachePacks))
}

// emptyCache removes rr's cache repository and opens it again empty; why
// says why, for the log and errors. The caller holds rr.mu.
func (f *GitFetcher) emptyCache(rr *remoteRepo, u, why string) error {
	dir := f.cacheRepoDir(rr.key)
	packs, size := packCount(rr.fs), dirSize(dir)
	rr.repo, rr.fs = nil, nil
	if err := os.RemoveAll(dir); err != nil {
		return fmt.Errorf("empty Git cache %s (%s): %w", dir, why, err)
	}
	repo, fsys, err := f.openCache(u, rr.key, &rr.budget, rr.objects)
	if err != nil {
		return err
	}
	rr.repo, rr.fs = repo, fsys
	f.log.V(1).Info("Git cache emptied; the next fetch takes only what it needs",
		"dir", dir, "why", why, "packs", packs, "bytes", size)
	return nil
}

// isShallow reports whether rr's cache holds shallow commits (their
// parents were not fetched).
func isShallow(rr *remoteRepo) bool {
	s, err := rr.repo.Storer.Shallow()
	return err == nil && len(s) > 0
}

// dirSize returns the bytes of the files below dir.
func dirSize(dir string) int64 {
	var n int64
	_ = filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil //nolint:nilerr // a file gone while walking is not counted
		}
		if info, err := d.Info(); err == nil && info.Mode().IsRegular() {
			n += info.Size()
		}
		return nil
	})
	return n
}

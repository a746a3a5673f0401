package source

import (
	"fmt"
	"io/fs"
	"path"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/driftguard/driftguard/redact"
	"github.com/driftguard/driftguard/render"
)

// Files returns the files below dir (recursively, hidden files and folders
// left out) whose name match accepts, at a revision that an earlier Fetch
// of req (its URL with its credentials) brought into the cache, within the
// render limits' files listed and file size (render.ProcessLimits). Keys
// are paths from the repository root.
func (f *GitFetcher) Files(req Request, revision, dir string, match func(name string) bool) (map[string]string, error) {
	url := req.URL
	rr := f.remote(req)
	rr.mu.Lock()
	defer rr.mu.Unlock()
	if rr.repo == nil {
		return nil, fmt.Errorf("read %s at %.7s: not fetched yet", redact.URL(url), revision)
	}
	commit, err := rr.repo.CommitObject(plumbing.NewHash(revision))
	if err != nil {
		return nil, fmt.Errorf("read %s at %.7s: %w", redact.URL(url), revision, err)
	}
	tree, err := commit.Tree()
	if err != nil {
		return nil, fmt.Errorf("read tree of %.7s: %w", revision, err)
	}
	fsys := TreeFS(tree, commit.Committer.When)
	root := render.CleanDir(dir)
	out := map[string]string{}
	maxBytes := render.ProcessLimits().MaxFileBytes
	err = render.WalkWithin(fsys, root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return fmt.Errorf("%s: %w", p, render.UnwrapPathError(err))
		}
		name := path.Base(p)
		if p != root && name[0] == '.' {
			if d.IsDir() {
				return fs.SkipDir
			}
			return nil
		}
		if !d.Type().IsRegular() || !match(name) {
			return nil
		}
		// The size first: a blob is inflated only when read.
		if info, err := fs.Stat(fsys, p); err == nil && info.Size() > maxBytes {
			return fmt.Errorf("read %s: %w", p, render.FileSizeError(maxBytes))
		}
		b, err := fs.ReadFile(fsys, p)
		if err != nil {
			return fmt.Errorf("read %s: %w", p, err)
		}
		out[p] = string(b)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("read %s at %.7s: %w", root, revision, err)
	}
	return out, nil
}

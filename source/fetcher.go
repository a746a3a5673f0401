package source

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"path"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"

	"github.com/driftguard/driftguard/redact"
	"github.com/driftguard/driftguard/render"
)

// Fetcher fetches every kind of source: Git with a GitFetcher, the
// others itself. It is safe for concurrent use; fetches of one source are
// serialized.
type Fetcher struct {
	git   *GitFetcher
	opts  FetchOptions // git's: the bounds of every download
	blobs blobStore
	log   logr.Logger
	http  *http.Transport

	mu      sync.Mutex
	sources map[string]*state // by Request.CacheKey: kind, URL, settings and credentials
}

// New returns a Fetcher that fetches Git with git and keeps downloaded
// archives below cacheDir. Every kind downloads within git's options
// (GitFetcher.SetOptions, before New).
func New(git *GitFetcher, cacheDir string, log logr.Logger) *Fetcher {
	opts := DefaultFetchOptions()
	if git != nil {
		opts = git.Options()
	}
	return &Fetcher{git: git, opts: opts, blobs: blobStore{dir: cacheDir, max: opts.MaxFetchBytes}, log: log, http: newTransport(),
		sources: map[string]*state{}}
}

// newTransport is the HTTP transport of every kind.
func newTransport() *http.Transport {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.ResponseHeaderTimeout = time.Minute
	return t
}

// state is what the Fetcher keeps of one source, fetched with one set of
// credentials, between fetches.
type state struct {
	key     string // Request.CacheKey
	mu      sync.Mutex
	renders RenderCache
	// content is the files of revision rev, for Files and for a render of
	// the same revision with other options or capabilities, which then
	// downloads nothing; dir is the folder load named in it.
	content fs.FS
	dir     string
	rev     string

	oci    *ociState
	helm   *helmState
	bucket *bucketState
}

// target is a revision a kind resolved, and how to get its files: the
// folder of fsys to render. load returns a *render.RenderError when the
// content itself is bad (a corrupt archive), so that the revision is not
// tried again; other errors are transient.
type target struct {
	rev  string
	load func(ctx context.Context) (fsys fs.FS, dir string, err error)
}

// ForgetListings drops the Git ref listings kept for urls (a push), see
// GitFetcher.ForgetListings.
func (f *Fetcher) ForgetListings(urls []string) {
	if f.git != nil {
		f.git.ForgetListings(urls)
	}
}

// Fetch resolves the revision req names and returns it with the Snapshot
// of it rendered with req.Render. An unchanged revision with unchanged
// options returns the Snapshot of the last Fetch, with no download and no
// render. Errors are a *FetchError (transient: the caller retries)
// or wrap a *render.RenderError (the revision's content is bad; the
// revision is returned with it).
func (f *Fetcher) Fetch(ctx context.Context, req Request) (string, *render.Snapshot, error) {
	switch req.Kind {
	case "", SourceGit:
		return f.git.Fetch(ctx, req)
	case SourceOCI, SourceHelmRepository, SourceBucket:
	default:
		return "", nil, &FetchError{URL: req.URL, Err: fmt.Errorf("unknown source kind %q", req.Kind)}
	}
	if req.Artifact == nil {
		req.Artifact = &ArtifactSource{}
	}
	st := f.state(req)
	st.mu.Lock()
	defer st.mu.Unlock()

	var (
		t   target
		err error
	)
	switch req.Kind {
	case SourceOCI:
		t, err = f.resolveOCI(ctx, st, req)
	case SourceHelmRepository:
		t, err = f.resolveHelm(ctx, st, req)
	case SourceBucket:
		t, err = f.resolveBucket(ctx, st, req)
	}
	if err != nil {
		return "", nil, fetchError(req, err)
	}
	log := f.log.WithValues("kind", req.Kind, "url", redact.URL(req.URL), "revision", t.rev)
	key := RenderKeyOf(req)
	if last := st.renders.Get(key); last != nil && last.Revision == t.rev && last.Current(req) {
		log.V(2).Info("revision unchanged")
		return t.rev, last.Snap, last.Err
	}
	if err := req.Failed.ErrFor(t.rev); err != nil {
		log.V(1).Info("revision failed before; not fetched or rendered again", "until", req.Failed.Until)
		return t.rev, nil, err
	}
	var re *render.RenderError
	fsys, dir := st.content, st.dir
	if fsys == nil || st.rev != t.rev {
		var err error
		fsys, dir, err = t.load(ctx)
		if errors.As(err, &re) {
			st.renders.Put(key, &Rendered{Revision: t.rev, Err: err})
			log.Info("artifact refused", "error", err.Error())
			return t.rev, nil, err
		}
		if err != nil {
			return "", nil, fetchError(req, err)
		}
		st.content, st.dir, st.rev = fsys, dir, t.rev
	}
	dir = path.Join(dir, key.Dir())
	src := render.Source{URL: req.URL, Revision: t.rev}
	objs, asked, err := render.RenderAsked(fsys, dir, src, req.Render)
	var snap *render.Snapshot
	if err == nil {
		snap, err = render.NewSnapshot(req.URL, t.rev, objs)
	}
	if err != nil {
		err = fmt.Errorf("render %s at %s: %w", orRoot(dir), ShortRevision(t.rev), err)
		if !errors.As(err, &re) {
			return t.rev, nil, err
		}
		st.renders.Put(key, &Rendered{Revision: t.rev, Err: err, Capabilities: asked})
		log.Info("render failed", "error", err.Error())
		return t.rev, nil, err
	}
	st.renders.Put(key, &Rendered{Revision: t.rev, Snap: snap, Capabilities: asked})
	log.V(1).Info("fetched", "objects", len(snap.Objects))
	return t.rev, snap, nil
}

// Files returns the files below dir whose name match accepts, at a
// revision an earlier Fetch of req (its source with its credentials)
// brought in: from the artifact or bucket, or from Git.
func (f *Fetcher) Files(req Request, revision, dir string, match func(name string) bool) (map[string]string, error) {
	if req.Kind == "" || req.Kind == SourceGit {
		return f.git.Files(req, revision, dir, match)
	}
	url := req.URL
	f.mu.Lock()
	st := f.sources[req.CacheKey()]
	f.mu.Unlock()
	if st == nil {
		return nil, fmt.Errorf("read %s at %s: not fetched", redact.URL(url), ShortRevision(revision))
	}
	st.mu.Lock()
	fsys, rev := st.content, st.rev
	st.mu.Unlock()
	if fsys == nil || rev != revision {
		return nil, fmt.Errorf("read %s at %s: not fetched", redact.URL(url), ShortRevision(revision))
	}
	root := cleanDir(dir)
	out := map[string]string{}
	err := fs.WalkDir(fsys, root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := path.Base(p)
		if p != root && strings.HasPrefix(name, ".") {
			if d.IsDir() {
				return fs.SkipDir
			}
			return nil
		}
		if d.Type().IsRegular() && match(name) {
			b, err := fs.ReadFile(fsys, p)
			if err != nil {
				return err
			}
			out[p] = string(b)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("read %s at %s: %w", root, ShortRevision(revision), err)
	}
	return out, nil
}

// state returns what the Fetcher keeps of req's source fetched with req's
// credentials.
func (f *Fetcher) state(req Request) *state {
	key := req.CacheKey()
	f.mu.Lock()
	defer f.mu.Unlock()
	st := f.sources[key]
	if st == nil {
		st = &state{key: key}
		f.sources[key] = st
	}
	return st
}

// fetchError makes err a *FetchError naming the source.
func fetchError(req Request, err error) error {
	var fe *FetchError
	if errors.As(err, &fe) {
		return err
	}
	return &FetchError{URL: req.URL, Err: err}
}

// cleanDir turns a path in a source into an fs.FS path.
func cleanDir(dir string) string {
	d := path.Clean("/" + filepath.ToSlash(dir))
	if d == "/" {
		return "."
	}
	return strings.TrimPrefix(d, "/")
}

func orRoot(dir string) string {
	if dir == "." || dir == "" {
		return "the root"
	}
	return dir
}

package source

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/go-git/go-billy/v5"
	"github.com/go-git/go-billy/v5/osfs"
	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/config"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/cache"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/plumbing/transport"
	"github.com/go-git/go-git/v5/storage/filesystem"
	"github.com/go-git/go-git/v5/storage/memory"
	"github.com/go-logr/logr"

	"github.com/driftguard/driftguard/redact"
	"github.com/driftguard/driftguard/render"
)

// Request says what to fetch.
type Request struct {
	URL string
	// Ref is a branch name, a tag name, a full reference name (refs/...) or a
	// full 40-hex commit SHA; empty means the remote's HEAD, unless SemVer
	// is set.
	Ref string
	// SemVer is a semver range of tags (">=1.2.0 <2", "^1.4", "~2.0"): the
	// highest tag that is a version in the range is fetched. Pre-releases
	// match only when the range names one (">=2.0.0-0"). It excludes Ref.
	SemVer string
	// Path is the folder to render, relative to the repository root; "" and
	// "." are the root.
	Path string
	Auth *Auth
	// Field is the spec field of URL (spec.git.url, spec.oci.url, ...), for
	// messages; "" says "the source URL".
	Field string
	// Failed is a revision that failed before, as the Guard's status
	// records it: when the source resolves to it and the Fetcher has no
	// outcome of its own for it, its error is returned, nothing fetched or
	// rendered.
	Failed *FailedRevision
	// Render says how Path is rendered: variables, Helm settings, SOPS
	// keys. Snapshots are cached by (revision, Path, Render.Hash()).
	Render render.RenderOptions

	// Kind of the source; "" and SourceGit are Git, which this package
	// fetches. The other kinds (package sources) read URL, Ref, SemVer and
	// Path as SourceKind documents, and Artifact.
	Kind SourceKind
	// Artifact holds what the kinds other than Git need besides URL.
	Artifact *ArtifactSource

	// ListingMaxAge lets a Git Fetch resolve Ref or SemVer with the ref
	// listing of an earlier Fetch of the same URL and credentials
	// (CacheKey) when that listing began at most this long ago, instead of
	// listing the remote again: the Guards of one repository reconciled
	// together share one listing. Zero lists the remote at every Fetch.
	// ForgetListings (a push) drops a repository's listings at once.
	ListingMaxAge time.Duration
	// ListingSince, when set, also lets a Git Fetch resolve with such a
	// listing when it began at or after ListingSince, whatever its age:
	// the caller asks for the remote as it was at some moment after then
	// (a Guard's reconcile, as of when it was queued), and a listing begun
	// since is as good as a new one. The Guards of a repository queued
	// together (created at once, woken by one push) share one listing
	// even when they are reconciled seconds apart.
	ListingSince time.Time
}

// FetchError is a failure to reach the remote, authenticate, resolve the
// ref or fetch objects. It is transient: the caller retries.
type FetchError struct {
	URL string
	Err error
}

// Error names the URL without credentials, and takes them out of every URL
// the cause quotes (go-git's and net/http's errors quote what they were given).
func (e *FetchError) Error() string {
	return redact.Text(fmt.Sprintf("fetch %s: %v", redact.URL(e.URL), e.Err))
}

func (e *FetchError) Unwrap() error { return e.Err }

// GitFetcher fetches revisions with go-git into bare repositories below a
// cache folder and renders them into Snapshots. Fetching the same (URL,
// Path) again costs one ref listing as long as the resolved revision does
// not change. Repositories and snapshots are kept per URL and credentials
// (Request.CacheKey): a request never reads what one with other
// credentials fetched. It is safe for concurrent use; calls for the same
// URL and credentials are serialized.
type GitFetcher struct {
	cacheDir string
	log      logr.Logger
	opts     FetchOptions

	mu    sync.Mutex
	repos map[string]*remoteRepo // by Request.CacheKey: URL and credentials
	// warm are the repositories used last, most recent first: only they
	// keep decoded objects (maxWarmRepos).
	warm []*remoteRepo
}

// remoteRepo is the on-disk cache of one remote, fetched with one set of
// credentials, and the last result of every (path, render options)
// rendered from it. mu serializes fetches of the remote.
type remoteRepo struct {
	key     string // Request.CacheKey
	url     string // the remote, for ForgetListings
	listing refListing
	mu      sync.Mutex
	repo    *git.Repository
	fs      billy.Filesystem // the repository's folder
	budget  budget           // what a fetch may still write to it
	renders RenderCache
	// objects are the repository's decoded Git objects, emptied when
	// maxWarmRepos other repositories were used since (Fetcher.warm).
	objects *cache.ObjectLRU
}

// NewGitFetcher returns a GitFetcher that keeps its repositories below cacheDir.
// It fetches with DefaultFetchOptions until SetOptions.
func NewGitFetcher(cacheDir string, log logr.Logger) *GitFetcher {
	return &GitFetcher{cacheDir: cacheDir, log: log, opts: DefaultFetchOptions(), repos: map[string]*remoteRepo{}}
}

// SetOptions sets what fetches may reach and download; zero limits take
// DefaultFetchOptions'. Call it before the first Fetch.
func (f *GitFetcher) SetOptions(o FetchOptions) { f.opts = o.withDefaults() }

// Options are the Fetcher's FetchOptions, which the fetchers of the other
// kinds of source share.
func (f *GitFetcher) Options() FetchOptions { return f.opts }

// Fetch resolves req.Ref on the remote and returns the resolved commit SHA
// and the Snapshot of req.Path at it, rendered with req.Render. When the SHA
// equals the one of the last successful Fetch of the same URL, Path and
// render options, that Snapshot is returned without fetching or rendering;
// when only the options changed, the commit is rendered again from the
// cache without fetching. Errors are a *FetchError (transient; it also carries
// credentials that do not fit the URL, a bad semver range and an untrusted
// SSH host key, a *HostKeyError) or wrap a *RenderError; with a render
// error the revision is still returned.
func (f *GitFetcher) Fetch(ctx context.Context, req Request) (revision string, snap *render.Snapshot, err error) {
	rng, err := f.check(req)
	if err != nil {
		return "", nil, &FetchError{URL: req.URL, Err: err}
	}
	dir := render.CleanDir(req.Path)
	key := RenderKeyOf(req)
	rr := f.remote(req)
	rr.mu.Lock()
	defer rr.mu.Unlock()

	auth, err := req.Auth.method(req.URL, f.cacheDir)
	if err != nil {
		return "", nil, &FetchError{URL: req.URL, Err: fmt.Errorf("auth: %w", err)}
	}
	hash, refName, err := rr.resolve(ctx, req, rng, auth)
	if err != nil {
		return "", nil, &FetchError{URL: req.URL, Err: explainAuth(err, auth)}
	}
	sha := hash.String()
	log := f.log.WithValues("url", redact.URL(req.URL), "ref", req.Ref, "path", dir, "revision", sha)
	if rng != nil {
		log = log.WithValues("semver", rng.text, "tag", refName.Short())
	}
	if last := rr.renders.Get(key); last != nil && last.Revision == sha && last.Current(req) {
		log.V(2).Info("revision unchanged")
		return sha, last.Snap, last.Err
	}
	if err := req.Failed.ErrFor(sha); err != nil {
		log.V(1).Info("revision failed before; not fetched or rendered again", "until", req.Failed.Until)
		return sha, nil, err
	}

	commit, err := f.commit(ctx, rr, req.URL, hash, refName, auth)
	var limit *render.LimitError
	if errors.As(err, &limit) {
		// The revision is too large: it stays too large, so it is
		// remembered as a failed render and not fetched again.
		err = fmt.Errorf("fetch %s: %w", ShortRevision(sha), &render.RenderError{Err: limit})
		rr.renders.Put(key, &Rendered{Revision: sha, Err: err})
		log.Info("fetch refused", "error", err.Error())
		return sha, nil, err
	}
	if err != nil {
		return "", nil, &FetchError{URL: req.URL, Err: explainAuth(err, auth)}
	}
	tree, err := commit.Tree()
	if err != nil {
		return "", nil, &FetchError{URL: req.URL, Err: fmt.Errorf("read tree of %s: %w", sha, err)}
	}

	snap, err = rr.render(log, req, key, TreeFS(tree, commit.Committer.When), sha)
	return sha, snap, err
}

// check refuses what no fetch of req can do (another kind of source, a
// local URL unless allowed, ref beside a semver range) and parses its
// semver range.
func (f *GitFetcher) check(req Request) (*semverRange, error) {
	if req.Kind != "" && req.Kind != SourceGit {
		return nil, fmt.Errorf("a %s source is not fetched with Git", req.Kind)
	}
	if !f.opts.AllowLocal {
		if err := CheckLocal(req.URL, req.Field); err != nil {
			return nil, err
		}
	}
	if req.SemVer == "" {
		return nil, nil
	}
	if req.Ref != "" {
		return nil, fmt.Errorf("ref %q and semver range %q exclude each other", req.Ref, req.SemVer)
	}
	c, err := parseRange(req.SemVer)
	if err != nil {
		return nil, err
	}
	return &semverRange{text: req.SemVer, c: c}, nil
}

// render renders req's path of the commit's tree and remembers the result
// (a render error too: the revision is not rendered again) under key.
func (rr *remoteRepo) render(log logr.Logger, req Request, key RenderKey, tree fs.FS, sha string) (*render.Snapshot, error) {
	dir := render.CleanDir(req.Path)
	objs, asked, err := render.RenderAsked(tree, dir, render.Source{URL: req.URL, Revision: sha}, req.Render)
	var snap *render.Snapshot
	if err == nil {
		snap, err = render.NewSnapshot(req.URL, sha, objs)
	}
	if err != nil {
		var re *render.RenderError
		if !errors.As(err, &re) {
			return nil, fmt.Errorf("render %s at %s: %w", dir, sha, err)
		}
		err = fmt.Errorf("render %s at %s: %w", dir, sha, err)
		rr.renders.Put(key, &Rendered{Revision: sha, Err: err, Capabilities: asked})
		log.Info("render failed", "error", err.Error())
		return nil, err
	}
	rr.renders.Put(key, &Rendered{Revision: sha, Snap: snap, Capabilities: asked})
	log.V(1).Info("fetched", "objects", len(snap.Objects))
	return snap, nil
}

// remote returns the cache of req's URL fetched with req's credentials.
func (f *GitFetcher) remote(req Request) *remoteRepo {
	key := req.CacheKey()
	f.mu.Lock()
	defer f.mu.Unlock()
	rr := f.repos[key]
	if rr == nil {
		rr = &remoteRepo{key: key, url: req.URL, objects: cache.NewObjectLRU(objectCacheSize)}
		f.repos[key] = rr
	}
	f.warmUp(rr)
	return rr
}

// maxWarmRepos is how many repositories keep their decoded objects: a
// guard of 100 repositories would otherwise keep up to 100 ×
// objectCacheSize of objects it reads again only at the next revision.
const maxWarmRepos = 8

// warmUp makes rr the most recently used repository and empties the object
// cache of the one that leaves the warm set. The caller holds f.mu.
func (f *GitFetcher) warmUp(rr *remoteRepo) {
	if i := slices.Index(f.warm, rr); i >= 0 {
		f.warm = slices.Delete(f.warm, i, i+1)
	}
	f.warm = slices.Insert(f.warm, 0, rr)
	if len(f.warm) > maxWarmRepos {
		cold := f.warm[maxWarmRepos]
		f.warm = f.warm[:maxWarmRepos]
		cold.objects.Clear() // the LRU locks itself: rr.mu is not needed
	}
}

// resolve turns req.Ref, or the highest tag in rng when rng is set, into a
// commit SHA, with a listing of the remote's references (one of at most
// req.ListingMaxAge, or begun since req.ListingSince, see refListing)
// unless the ref already is a SHA.
// refName is the reference to fetch; it is empty when the SHA itself must
// be fetched. The caller holds rr.mu.
func (rr *remoteRepo) resolve(ctx context.Context, req Request, rng *semverRange, auth transport.AuthMethod) (plumbing.Hash, plumbing.ReferenceName, error) {
	if rng == nil && len(req.Ref) == 40 && plumbing.IsHash(req.Ref) {
		return plumbing.NewHash(req.Ref), "", nil
	}
	refs, err := rr.listing.get(req.ListingMaxAge, req.ListingSince, func() ([]*plumbing.Reference, error) {
		remote := git.NewRemote(memory.NewStorage(), &config.RemoteConfig{Name: "origin", URLs: []string{req.URL}})
		return remote.ListContext(ctx, &git.ListOptions{Auth: auth, PeelingOption: git.AppendPeeled})
	})
	if err != nil {
		return plumbing.ZeroHash, "", fmt.Errorf("list references: %w", err)
	}
	return pickRef(refs, req.Ref, rng)
}

// pickRef finds ref, or the highest tag in rng, in a listing of refs.
func pickRef(refs []*plumbing.Reference, ref string, rng *semverRange) (plumbing.Hash, plumbing.ReferenceName, error) {
	byName := make(map[plumbing.ReferenceName]*plumbing.Reference, len(refs))
	for _, r := range refs {
		byName[r.Name()] = r
	}

	var candidates []plumbing.ReferenceName
	switch {
	case rng != nil:
		name, err := highestTag(refs, rng.text, rng.c)
		if err != nil {
			return plumbing.ZeroHash, "", err
		}
		candidates = []plumbing.ReferenceName{name}
	case ref == "" || ref == "HEAD":
		head := byName[plumbing.HEAD]
		if head == nil {
			return plumbing.ZeroHash, "", errors.New("remote advertises no HEAD")
		}
		if head.Type() == plumbing.SymbolicReference {
			candidates = []plumbing.ReferenceName{head.Target()}
			break
		}
		// No symref capability: fetch a branch HEAD points at, else the SHA.
		for _, r := range refs {
			if r.Name().IsBranch() && r.Hash() == head.Hash() {
				return r.Hash(), r.Name(), nil
			}
		}
		return head.Hash(), "", nil
	case strings.HasPrefix(ref, "refs/"):
		candidates = []plumbing.ReferenceName{plumbing.ReferenceName(ref)}
	default:
		candidates = []plumbing.ReferenceName{plumbing.NewBranchReferenceName(ref), plumbing.NewTagReferenceName(ref)}
	}
	for _, name := range candidates {
		r := byName[name]
		if r == nil || r.Type() != plumbing.HashReference {
			continue
		}
		// An annotated tag is advertised peeled as NAME^{}: use the commit.
		if peeled := byName[name+"^{}"]; peeled != nil {
			return peeled.Hash(), name, nil
		}
		return r.Hash(), name, nil
	}
	return plumbing.ZeroHash, "", fmt.Errorf("reference %q not found on the remote", ref)
}

// commit returns the commit hash from the cache repository, fetching it
// first when it is not there yet.
func (f *GitFetcher) commit(ctx context.Context, rr *remoteRepo, u string, hash plumbing.Hash, refName plumbing.ReferenceName, auth transport.AuthMethod) (*object.Commit, error) {
	if rr.repo == nil {
		repo, fs, err := f.openCache(u, rr.key, &rr.budget, rr.objects)
		if err != nil {
			return nil, err
		}
		rr.repo, rr.fs = repo, fs
	}
	if c, err := rr.repo.CommitObject(hash); err == nil {
		return c, nil
	}
	// A new commit: make room for its pack (--git-cache-max-packs).
	if err := f.trimCache(rr, u); err != nil {
		return nil, err
	}

	opts := &git.FetchOptions{RemoteName: cacheRemote, RemoteURL: u, Auth: auth, Depth: 1, Tags: git.NoTags, Force: true}
	if refName != "" {
		opts.RefSpecs = []config.RefSpec{config.RefSpec("+" + refName + ":" + refName)}
	} else {
		opts.RefSpecs = []config.RefSpec{config.RefSpec(hash.String() + ":refs/driftguard/" + hash.String())}
	}
	// What the server sends is written to the cache as it arrives, within
	// --source-max-fetch-size and --git-max-object-size.
	rr.budget.start(f.opts.MaxFetchBytes, f.opts.MaxObjectBytes)
	defer rr.budget.stop()
	err := rr.repo.FetchContext(ctx, opts)
	if errors.Is(err, git.ErrExactSHA1NotSupported) {
		// The server does not let us ask for a commit by SHA: fetch every
		// branch and tag in full and look for it there.
		opts.Depth = 0
		opts.RefSpecs = []config.RefSpec{"+refs/heads/*:refs/heads/*", "+refs/tags/*:refs/tags/*"}
		rr.budget.start(f.opts.MaxFetchBytes, f.opts.MaxObjectBytes)
		err = rr.repo.FetchContext(ctx, opts)
		if _, cerr := rr.repo.CommitObject(hash); cerr != nil && (err == nil || errors.Is(err, git.NoErrAlreadyUpToDate)) && isShallow(rr) {
			// A shallow cache whose branches are up to date brings nothing
			// older by fetching them "in full": start it again, unshallow.
			if err := f.emptyCache(rr, u, "an older commit asked for by SHA"); err != nil {
				return nil, err
			}
			rr.budget.start(f.opts.MaxFetchBytes, f.opts.MaxObjectBytes)
			err = rr.repo.FetchContext(ctx, opts)
		}
	}
	if rr.budget.over.Load() {
		removeTempPacks(rr.fs)
		return nil, FetchSizeError("the pack the server sent", f.opts.MaxFetchBytes)
	}
	if rr.budget.objectOver.Load() {
		removeTempPacks(rr.fs)
		return nil, ObjectSizeError(f.opts.MaxObjectBytes)
	}
	if err != nil && !errors.Is(err, git.NoErrAlreadyUpToDate) {
		return nil, fmt.Errorf("fetch %s: %w", hash, err)
	}
	c, err := rr.repo.CommitObject(hash)
	if err != nil {
		return nil, fmt.Errorf("commit %s after fetch: %w", hash, err)
	}
	return c, nil
}

const cacheRemote = "origin"

// objectCacheSize bounds the decoded Git objects kept per repository.
const objectCacheSize = 4 * cache.MiByte

// openCache opens, or creates, the bare cache repository of u fetched with
// the credentials of key (a Request.CacheKey).
func (f *GitFetcher) openCache(u, key string, b *budget, objs *cache.ObjectLRU) (*git.Repository, billy.Filesystem, error) {
	dir := f.cacheRepoDir(key)
	fs := budgetFS{Filesystem: osfs.New(dir), b: b}
	// go-git's default object cache keeps up to 96 MiB of decoded objects
	// per repository for as long as the guard runs; rendering reads each
	// file once per revision, so a small one does, kept only while the
	// repository is among the maxWarmRepos used last. A folder opened
	// again (emptied) starts with none.
	objs.Clear()
	st := filesystem.NewStorage(fs, objs)
	repo, err := git.Open(st, nil)
	switch {
	case errors.Is(err, git.ErrRepositoryNotExists):
		if err := os.MkdirAll(f.cacheDir, 0o755); err != nil {
			return nil, nil, fmt.Errorf("create cache folder %s: %w", f.cacheDir, err)
		}
		if repo, err = git.Init(st, nil); err != nil {
			return nil, nil, fmt.Errorf("init cache %s: %w", dir, err)
		}
	case err != nil:
		return nil, nil, fmt.Errorf("open cache %s: %w", dir, err)
	}
	// Fetch needs a configured remote; its URL is also given per fetch.
	if _, err := repo.Remote(cacheRemote); errors.Is(err, git.ErrRemoteNotFound) {
		_, err = repo.CreateRemote(&config.RemoteConfig{Name: cacheRemote, URLs: []string{u}})
		if err != nil {
			return nil, nil, fmt.Errorf("configure cache %s: %w", dir, err)
		}
	} else if err != nil {
		return nil, nil, fmt.Errorf("open cache %s: %w", dir, err)
	}
	return repo, fs, nil
}

package source

import (
	"errors"
	"fmt"
	"strconv"

	"github.com/go-git/go-git/v5/plumbing/transport"
	"github.com/spf13/pflag"

	"github.com/driftguard/driftguard/redact"
	"github.com/driftguard/driftguard/render"
)

// FetchOptions say what fetching a source may reach and download. A
// source's URL and content are chosen by whoever writes the Guard or
// publishes to the source; docs/security.md ("Fetch limits", "Local
// sources") says which threat each answers.
type FetchOptions struct {
	// AllowLocal lets a Git source name the guard's own disk: a file://
	// URL or a path. Off, such a source is refused: it would read the
	// guard's caches (other Guards' private repositories) and any
	// repository on its disk.
	AllowLocal bool
	// MaxFetchBytes bounds what one revision downloads: the Git pack of
	// one fetch, an OCI layer, a chart archive, the objects of a bucket
	// prefix in all. It is enforced while the bytes arrive.
	MaxFetchBytes int64
	// MaxUnpackedBytes bounds the files of an archive (OCI artifact,
	// chart) unpacked, and of a bucket prefix as listed.
	MaxUnpackedBytes int64
	// MaxFiles bounds the files of an archive or bucket prefix.
	MaxFiles int
	// MaxObjectBytes bounds one object of a Git pack, inflated: go-git
	// inflates each object whole (in a buffer that grows to twice its
	// size) while it indexes a fetched pack, so a gigabyte of zeros, a
	// megabyte on the wire, took a gigabyte of the guard's memory.
	MaxObjectBytes int64
	// MaxCachePacks bounds the Git cache of one repository: each fetch of
	// a new commit adds a pack to it, and a cache that holds this many is
	// emptied before the next fetch, which then takes only the commit
	// asked for (one shallow fetch, as at start-up). The cache of a
	// repository stays below MaxCachePacks packs of at most MaxFetchBytes
	// each.
	MaxCachePacks int
}

// DefaultFetchOptions are the options when nothing else is set.
func DefaultFetchOptions() FetchOptions {
	return FetchOptions{MaxFetchBytes: 256 << 20, MaxUnpackedBytes: 256 << 20, MaxFiles: 20_000, MaxObjectBytes: 64 << 20, MaxCachePacks: DefaultMaxCachePacks}
}

// The flags of the fetch options, named in errors.
const (
	FlagAllowLocalSources  = "allow-local-sources"
	FlagSourceMaxFetchSize = "source-max-fetch-size"
	FlagSourceMaxUnpacked  = "source-max-unpacked-size"
	FlagSourceMaxFiles     = "source-max-files"
	FlagGitMaxObjectSize   = "git-max-object-size"
	FlagGitCacheMaxPacks   = "git-cache-max-packs"
)

// DefaultMaxCachePacks is --git-cache-max-packs' default. A fetch of a
// new commit into the shallow cache brings the whole tree again (go-git
// sends the server nothing it has: four commits of a 40-file repository
// wrote four packs of 9 KB each), so emptying the cache costs the next
// fetch nothing, and a few packs are all it is worth keeping.
const DefaultMaxCachePacks = 4

// BindFlags registers a flag for every option, with o's values as
// defaults (sizes are quantities: 256Mi, 1G).
func (o *FetchOptions) BindFlags(fs *pflag.FlagSet) {
	fs.BoolVar(&o.AllowLocal, FlagAllowLocalSources, o.AllowLocal, "let Git sources name the guard's own disk (file:// URLs and paths); off, they are refused: they read the guard's caches and files")
	fs.Var((*render.ByteSize)(&o.MaxFetchBytes), FlagSourceMaxFetchSize, "most bytes one revision of a source downloads: a Git pack, an OCI layer, a chart archive, a bucket prefix's objects in all")
	fs.Var((*render.ByteSize)(&o.MaxUnpackedBytes), FlagSourceMaxUnpacked, "most bytes the files of an OCI artifact or chart archive unpack to, or a bucket prefix lists")
	fs.IntVar(&o.MaxFiles, FlagSourceMaxFiles, o.MaxFiles, "most files an OCI artifact, chart archive or bucket prefix holds")
	fs.Var((*render.ByteSize)(&o.MaxObjectBytes), FlagGitMaxObjectSize, "largest object (a file, a tree) of a fetched Git pack, inflated; go-git holds each whole, twice over, while it indexes the pack")
	fs.IntVar(&o.MaxCachePacks, FlagGitCacheMaxPacks, o.MaxCachePacks, "most packs the Git cache of one repository holds (each fetch of a new commit adds one); a full cache is emptied and the next fetch takes only the commit it needs")
}

// Validate checks that every limit is positive, naming the flag at fault.
func (o FetchOptions) Validate() error {
	for _, c := range []struct {
		flag string
		v    int64
	}{{FlagSourceMaxFetchSize, o.MaxFetchBytes}, {FlagSourceMaxUnpacked, o.MaxUnpackedBytes}, {FlagSourceMaxFiles, int64(o.MaxFiles)}, {FlagGitMaxObjectSize, o.MaxObjectBytes}, {FlagGitCacheMaxPacks, int64(o.MaxCachePacks)}} {
		if c.v <= 0 {
			return fmt.Errorf("--%s: must be above 0", c.flag)
		}
	}
	return nil
}

// over returns o with its zero limits taken from the defaults.
func (o FetchOptions) withDefaults() FetchOptions {
	d := DefaultFetchOptions()
	if o.MaxFetchBytes <= 0 {
		o.MaxFetchBytes = d.MaxFetchBytes
	}
	if o.MaxUnpackedBytes <= 0 {
		o.MaxUnpackedBytes = d.MaxUnpackedBytes
	}
	if o.MaxFiles <= 0 {
		o.MaxFiles = d.MaxFiles
	}
	if o.MaxObjectBytes <= 0 {
		o.MaxObjectBytes = d.MaxObjectBytes
	}
	if o.MaxCachePacks <= 0 {
		o.MaxCachePacks = d.MaxCachePacks
	}
	return o
}

// FetchSizeError is a download beyond --source-max-fetch-size; what says
// what was downloaded ("the pack of commit 1a2b3c4").
func FetchSizeError(what string, max int64) *render.LimitError {
	return &render.LimitError{What: fmt.Sprintf("%s is larger than %s", what, render.SizeText(max)), Flag: FlagSourceMaxFetchSize, Value: render.SizeText(max)}
}

// ObjectSizeError is a Git object beyond --git-max-object-size.
func ObjectSizeError(max int64) *render.LimitError {
	return &render.LimitError{What: fmt.Sprintf("an object of the pack the server sent inflates to more than %s", render.SizeText(max)), Flag: FlagGitMaxObjectSize, Value: render.SizeText(max)}
}

// UnpackedSizeError is an archive or bucket prefix beyond
// --source-max-unpacked-size.
func UnpackedSizeError(what string, max int64) *render.LimitError {
	return &render.LimitError{What: fmt.Sprintf("%s holds more than %s unpacked", what, render.SizeText(max)), Flag: FlagSourceMaxUnpacked, Value: render.SizeText(max)}
}

// FilesError is an archive or bucket prefix beyond --source-max-files.
func FilesError(what string, max int) *render.LimitError {
	return &render.LimitError{What: fmt.Sprintf("%s holds more than %d files", what, max), Flag: FlagSourceMaxFiles, Value: strconv.Itoa(max)}
}

// ErrLocalSource is wrapped by the error of a source on the guard's own
// disk while --allow-local-sources is off.
var ErrLocalSource = errors.New("local sources are refused")

// CheckLocal returns an error wrapping ErrLocalSource when rawURL, the
// value of field (spec.git.url), names the guard's own disk: a file:// URL or
// a path, which go-git reads as a local repository. A URL that does not
// parse is left to the fetch, which reports it.
func CheckLocal(rawURL, field string) error {
	ep, err := transport.NewEndpoint(rawURL)
	if err != nil || ep.Protocol != "file" {
		return nil
	}
	if field == "" {
		field = "the source URL"
	}
	return fmt.Errorf("%s %q is on the guard's own disk (a file:// URL or a path): %w, they would read the guard's caches and files; use an http(s):// or ssh:// URL, or start driftguard run with --%s",
		field, redact.URL(rawURL), ErrLocalSource, FlagAllowLocalSources)
}

package source

import (
	"archive/tar"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/driftguard/driftguard/render"
)

// The default bounds of archives and bucket prefixes (flags of driftguard
// run: FetchOptions).
const (
	maxUnpackedSize = 256 << 20 // bytes of all files of an archive or bucket prefix
	maxFiles        = 20000     // files of an archive or bucket prefix
)

// untar reads a tar.gz archive within the default bounds.
func untar(r io.Reader) (map[string][]byte, error) {
	return untarWithin(r, maxUnpackedSize, maxFiles)
}

// untarWithin reads a tar.gz archive into files by slash-separated path.
// Folders are implied; an entry whose path leaves the archive, a link, a
// device or a path both a file and a folder is an error, as is a path
// longer than maxEntryPath, an archive of more than maxBytes unpacked or
// more than maxEntries files and folders (a *render.LimitError), found
// before the entry beyond them is read.
func untarWithin(r io.Reader, maxBytes int64, maxEntries int) (map[string][]byte, error) {
	zr, err := gzip.NewReader(r)
	if err != nil {
		return nil, fmt.Errorf("not a gzip archive: %w", err)
	}
	defer func() { _ = zr.Close() }()
	tr := tar.NewReader(zr)
	files := map[string][]byte{}
	dirs := map[string]bool{} // the folders of the files so far
	var total int64
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("read tar: %w", err)
		}
		name, err := entryPath(hdr.Name)
		if err != nil {
			return nil, err
		}
		switch hdr.Typeflag {
		case tar.TypeDir, tar.TypeXGlobalHeader:
			continue
		case tar.TypeReg:
		default:
			return nil, fmt.Errorf("entry %q is not a regular file or folder (type %q): artifacts hold files only", hdr.Name, hdr.Typeflag)
		}
		if name == "" {
			return nil, fmt.Errorf("entry %q has no name", hdr.Name)
		}
		// A path is a file or a folder, not both, as in Git: the files
		// make a tree, which every reader of it sees the same way.
		if dirs[name] {
			return nil, fmt.Errorf("entry %q is a file and the folder of an entry before it", hdr.Name)
		}
		// Folders count with files: a path of thousands of folders is
		// thousands of entries to keep (and walking up each is the path's
		// length again).
		for d := path.Dir(name); d != "." && !dirs[d]; d = path.Dir(d) {
			if _, ok := files[d]; ok {
				return nil, fmt.Errorf("entry %q is below %q, which is a file", hdr.Name, d)
			}
			if len(files)+len(dirs) >= maxEntries {
				return nil, entriesError(maxEntries)
			}
			dirs[d] = true
		}
		if len(files)+len(dirs) >= maxEntries {
			return nil, entriesError(maxEntries)
		}
		total += hdr.Size
		if hdr.Size < 0 || total > maxBytes {
			return nil, UnpackedSizeError("the archive", maxBytes)
		}
		data, err := io.ReadAll(io.LimitReader(tr, hdr.Size))
		if err != nil {
			return nil, fmt.Errorf("read %s: %w", name, err)
		}
		files[name] = data
	}
	return files, nil
}

// maxEntryPath bounds the path of an archive entry (Linux's PATH_MAX).
const maxEntryPath = 4096

// entriesError is an archive of more than max files and folders.
func entriesError(max int) *render.LimitError {
	e := FilesError("the archive", max)
	e.What += " and folders"
	return e
}

// entryPath cleans the path of an archive entry; "" is the root.
func entryPath(name string) (string, error) {
	if len(name) > maxEntryPath {
		return "", fmt.Errorf("entry %.64q… has a path of %d bytes, more than %d", name, len(name), maxEntryPath)
	}
	p := path.Clean(strings.TrimPrefix(strings.ReplaceAll(name, "\\", "/"), "./"))
	if p == "." {
		return "", nil
	}
	if path.IsAbs(p) || p == ".." || strings.HasPrefix(p, "../") {
		return "", fmt.Errorf("entry %q leaves the archive", name)
	}
	// A file system's paths are UTF-8 (fs.ValidPath): a file kept under
	// another name could be listed but never opened.
	if !utf8.ValidString(p) {
		return "", fmt.Errorf("entry %q has a path that is not UTF-8", name)
	}
	return p, nil
}

// blobStore keeps downloaded archives below a folder by the source they
// were fetched from with its credentials (a Request.CacheKey, the
// owner) and their sha256 digest, so a revision seen before is not
// downloaded again, and never handed to a source with other credentials
// (which must download it itself, and be refused by a registry or
// repository that keeps it private). It keeps the maxBlobs archives used
// last.
type blobStore struct {
	dir string
	max int64 // a kept archive larger than this is not read
}

const maxBlobs = 100

func (b blobStore) path(owner, hexDigest string) string {
	return filepath.Join(b.dir, "sha256", owner[:min(len(owner), 32)]+"-"+hexDigest)
}

// get returns the archive with digest hexDigest that owner downloaded, nil
// when it is not kept or no longer matches its digest.
func (b blobStore) get(owner, hexDigest string) []byte {
	if b.dir == "" || len(hexDigest) != 64 || owner == "" {
		return nil
	}
	p := b.path(owner, hexDigest)
	if info, err := os.Stat(p); err != nil || (b.max > 0 && info.Size() > b.max) {
		return nil
	}
	data, err := readFileLimit(p, b.max)
	if err != nil {
		return nil
	}
	if sum := sha256.Sum256(data); hex.EncodeToString(sum[:]) != hexDigest {
		_ = os.Remove(p)
		return nil
	}
	now := time.Now()
	_ = os.Chtimes(p, now, now) // used last now
	return data
}

// prune removes the archives used least recently beyond maxBlobs.
func (b blobStore) prune() {
	dir := filepath.Join(b.dir, "sha256")
	entries, err := os.ReadDir(dir)
	if err != nil || len(entries) <= maxBlobs {
		return
	}
	type blob struct {
		name string
		at   time.Time
	}
	var blobs []blob
	for _, e := range entries {
		if info, err := e.Info(); err == nil && info.Mode().IsRegular() {
			blobs = append(blobs, blob{e.Name(), info.ModTime()})
		}
	}
	sort.Slice(blobs, func(i, j int) bool { return blobs[i].at.After(blobs[j].at) })
	for _, x := range blobs[min(len(blobs), maxBlobs):] {
		_ = os.Remove(filepath.Join(dir, x.name))
	}
}

// put keeps data that owner downloaded under its digest, atomically.
func (b blobStore) put(owner string, data []byte) (string, error) {
	sum := sha256.Sum256(data)
	hexDigest := hex.EncodeToString(sum[:])
	if b.dir == "" || owner == "" {
		return hexDigest, nil
	}
	dst := b.path(owner, hexDigest)
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return "", fmt.Errorf("archive cache: %w", err)
	}
	tmp, err := os.CreateTemp(filepath.Dir(dst), ".tmp-*")
	if err != nil {
		return "", fmt.Errorf("archive cache: %w", err)
	}
	defer func() { _ = os.Remove(tmp.Name()) }() // gone after the rename
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return "", fmt.Errorf("archive cache: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return "", fmt.Errorf("archive cache: %w", err)
	}
	if err := os.Rename(tmp.Name(), dst); err != nil {
		return "", fmt.Errorf("archive cache: %w", err)
	}
	b.prune()
	return hexDigest, nil
}

// errTooLarge is what readAllLimit reads beyond its bound.
var errTooLarge = errors.New("larger than the limit")

// readAllLimit reads r whole, failing with errTooLarge beyond max bytes as
// soon as it has read them.
func readAllLimit(r io.Reader, max int64) ([]byte, error) {
	data, err := io.ReadAll(io.LimitReader(r, max+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > max {
		return nil, fmt.Errorf("%w: more than %d bytes", errTooLarge, max)
	}
	return data, nil
}

// readFileLimit reads a file within max bytes (no bound when max is 0).
func readFileLimit(name string, max int64) ([]byte, error) {
	if max <= 0 {
		return os.ReadFile(name)
	}
	f, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	defer func() { _ = f.Close() }()
	return readAllLimit(f, max)
}

package source

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"time"

	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"
)

// treeFS is a read-only fs.FS over a Git tree object, so a commit can be
// rendered without a worktree. Symlinks and submodules are listed with
// their type but cannot be opened as regular files.
type treeFS struct {
	root *object.Tree
	when time.Time // commit time, reported as every file's ModTime
}

// TreeFS is a read-only fs.FS over the Git tree root (a commit's, or one
// gitwrite edited), reporting when as every file's ModTime.
func TreeFS(root *object.Tree, when time.Time) fs.FS { return &treeFS{root: root, when: when} }

func (t *treeFS) Open(name string) (fs.File, error) {
	if !fs.ValidPath(name) {
		return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrInvalid}
	}
	if name == "." {
		return &treeDir{info: treeInfo{name: ".", mode: fs.ModeDir | 0o555, when: t.when}, tree: t.root, fsys: t}, nil
	}
	entry, err := t.root.FindEntry(name)
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: name, Err: notExist(err)}
	}
	info := t.entryInfo(entry, 0)
	switch entry.Mode {
	case filemode.Dir:
		sub, err := t.root.Tree(name)
		if err != nil {
			return nil, &fs.PathError{Op: "open", Path: name, Err: notExist(err)}
		}
		return &treeDir{info: info, tree: sub, fsys: t}, nil
	case filemode.Regular, filemode.Executable, filemode.Deprecated:
		f, err := t.root.TreeEntryFile(entry)
		if err != nil {
			return nil, &fs.PathError{Op: "open", Path: name, Err: err}
		}
		info.size = f.Size
		// The content is read at the first Read, not here: go-git
		// inflates a blob whole when its reader opens, and a reader that
		// checks Stat's size first (the render's file-size limit) must
		// not pay for a gigabyte committed as a megabyte of zeros.
		return &treeFile{info: info, file: f}, nil
	}
	return nil, &fs.PathError{Op: "open", Path: name, Err: fmt.Errorf("not a regular file (mode %s)", entry.Mode)}
}

func notExist(err error) error {
	if errors.Is(err, object.ErrEntryNotFound) || errors.Is(err, object.ErrDirectoryNotFound) || errors.Is(err, object.ErrFileNotFound) {
		return fs.ErrNotExist
	}
	return err
}

func (t *treeFS) entryInfo(e *object.TreeEntry, size int64) treeInfo {
	var mode fs.FileMode
	switch e.Mode {
	case filemode.Dir:
		mode = fs.ModeDir | 0o555
	case filemode.Executable:
		mode = 0o555
	case filemode.Symlink:
		mode = fs.ModeSymlink | 0o777
	case filemode.Submodule:
		mode = fs.ModeIrregular
	default:
		mode = 0o444
	}
	return treeInfo{name: e.Name, mode: mode, size: size, when: t.when}
}

type treeInfo struct {
	name string
	mode fs.FileMode
	size int64
	when time.Time
}

func (i treeInfo) Name() string               { return i.name }
func (i treeInfo) Size() int64                { return i.size }
func (i treeInfo) Mode() fs.FileMode          { return i.mode }
func (i treeInfo) ModTime() time.Time         { return i.when }
func (i treeInfo) IsDir() bool                { return i.mode.IsDir() }
func (i treeInfo) Sys() any                   { return nil }
func (i treeInfo) Type() fs.FileMode          { return i.mode.Type() }
func (i treeInfo) Info() (fs.FileInfo, error) { return i, nil }

type treeFile struct {
	info treeInfo
	file *object.File
	r    io.ReadCloser // opened at the first Read
}

func (f *treeFile) Stat() (fs.FileInfo, error) { return f.info, nil }

func (f *treeFile) Read(p []byte) (int, error) {
	if f.r == nil {
		r, err := f.file.Reader()
		if err != nil {
			return 0, &fs.PathError{Op: "read", Path: f.info.name, Err: err}
		}
		f.r = r
	}
	return f.r.Read(p)
}

func (f *treeFile) Close() error {
	if f.r == nil {
		return nil
	}
	return f.r.Close()
}

type treeDir struct {
	info treeInfo
	tree *object.Tree
	fsys *treeFS
	pos  int
}

func (d *treeDir) Stat() (fs.FileInfo, error) { return d.info, nil }
func (d *treeDir) Read([]byte) (int, error) {
	return 0, &fs.PathError{Op: "read", Path: d.info.name, Err: errors.New("is a directory")}
}
func (d *treeDir) Close() error { return nil }

// ReadDir lists the entries of the tree; sizes of files are not computed.
func (d *treeDir) ReadDir(n int) ([]fs.DirEntry, error) {
	rest := d.tree.Entries[d.pos:]
	if n > 0 && len(rest) == 0 {
		return nil, io.EOF
	}
	if n > 0 && n < len(rest) {
		rest = rest[:n]
	}
	out := make([]fs.DirEntry, len(rest))
	for i := range rest {
		out[i] = d.fsys.entryInfo(&rest[i], 0)
	}
	d.pos += len(rest)
	return out, nil
}

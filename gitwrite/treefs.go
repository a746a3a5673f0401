package gitwrite

import (
	"bytes"
	"errors"
	"io"
	"io/fs"
	"time"

	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"
)

// treeFS is a read-only fs.FS over a Git tree object. Symlinks and
// submodules are listed with their type and cannot be opened.
type treeFS struct {
	root *object.Tree
}

func (t *treeFS) Open(name string) (fs.File, error) {
	if !fs.ValidPath(name) {
		return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrInvalid}
	}
	if name == "." {
		return &treeDir{info: entryInfo{name: ".", mode: filemode.Dir}, tree: t.root}, nil
	}
	e, err := t.root.FindEntry(name)
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrNotExist}
	}
	info := entryInfo{name: e.Name, mode: e.Mode}
	switch e.Mode {
	case filemode.Dir:
		sub, err := t.root.Tree(name)
		if err != nil {
			return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrNotExist}
		}
		return &treeDir{info: info, tree: sub}, nil
	case filemode.Regular, filemode.Executable, filemode.Deprecated:
		f, err := t.root.TreeEntryFile(e)
		if err != nil {
			return nil, &fs.PathError{Op: "open", Path: name, Err: err}
		}
		r, err := f.Reader()
		if err != nil {
			return nil, &fs.PathError{Op: "open", Path: name, Err: err}
		}
		defer r.Close()
		data, err := io.ReadAll(r)
		if err != nil {
			return nil, &fs.PathError{Op: "read", Path: name, Err: err}
		}
		info.size = int64(len(data))
		return &treeFile{info: info, r: bytes.NewReader(data)}, nil
	}
	return nil, &fs.PathError{Op: "open", Path: name, Err: errors.New("not a regular file or folder")}
}

type entryInfo struct {
	name string
	mode filemode.FileMode
	size int64
}

func (i entryInfo) Name() string       { return i.name }
func (i entryInfo) Size() int64        { return i.size }
func (i entryInfo) ModTime() time.Time { return time.Time{} }
func (i entryInfo) IsDir() bool        { return i.mode == filemode.Dir }
func (i entryInfo) Sys() any           { return nil }
func (i entryInfo) Mode() fs.FileMode {
	switch i.mode {
	case filemode.Dir:
		return fs.ModeDir | 0o555
	case filemode.Executable:
		return 0o555
	case filemode.Symlink:
		return fs.ModeSymlink | 0o444
	case filemode.Submodule:
		return fs.ModeIrregular
	}
	return 0o444
}
func (i entryInfo) Type() fs.FileMode          { return i.Mode().Type() }
func (i entryInfo) Info() (fs.FileInfo, error) { return i, nil }

type treeFile struct {
	info entryInfo
	r    *bytes.Reader
}

func (f *treeFile) Stat() (fs.FileInfo, error) { return f.info, nil }
func (f *treeFile) Read(b []byte) (int, error) { return f.r.Read(b) }
func (f *treeFile) Close() error               { return nil }

type treeDir struct {
	info entryInfo
	tree *object.Tree
	next int
}

func (d *treeDir) Stat() (fs.FileInfo, error) { return d.info, nil }
func (d *treeDir) Read([]byte) (int, error) {
	return 0, &fs.PathError{Op: "read", Path: d.info.name, Err: errors.New("is a directory")}
}
func (d *treeDir) Close() error { return nil }

// ReadDir lists the folder in Git's order, which is sorted by name.
func (d *treeDir) ReadDir(n int) ([]fs.DirEntry, error) {
	entries := d.tree.Entries[d.next:]
	if n > 0 && len(entries) > n {
		entries = entries[:n]
	}
	if n > 0 && len(entries) == 0 {
		return nil, io.EOF
	}
	out := make([]fs.DirEntry, len(entries))
	for i, e := range entries {
		out[i] = entryInfo{name: e.Name, mode: e.Mode}
	}
	d.next += len(entries)
	return out, nil
}

package gitwrite

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path"
	"sort"
	"strings"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/plumbing/storer"

	"github.com/driftguard/driftguard/source"
)

// Tree is the tree of a commit being edited. Paths are slash-separated and
// relative to the repository root; "" is the root. Folders are created as
// files are written into them and disappear when they become empty.
type Tree struct {
	s    storer.EncodedObjectStorer
	root *dirNode
}

// dirNode is one folder: its entries, and the subfolders loaded to be
// edited (their entry's hash is stale until the tree is written).
type dirNode struct {
	entries map[string]object.TreeEntry
	subs    map[string]*dirNode
}

func newTree(s storer.EncodedObjectStorer, root plumbing.Hash) (*Tree, error) {
	d, err := loadDir(s, root)
	if err != nil {
		return nil, err
	}
	return &Tree{s: s, root: d}, nil
}

func loadDir(s storer.EncodedObjectStorer, h plumbing.Hash) (*dirNode, error) {
	d := &dirNode{entries: map[string]object.TreeEntry{}, subs: map[string]*dirNode{}}
	if h.IsZero() {
		return d, nil
	}
	t, err := object.GetTree(s, h)
	if err != nil {
		return nil, fmt.Errorf("read tree %s: %w", h, err)
	}
	for _, e := range t.Entries {
		d.entries[e.Name] = e
	}
	return d, nil
}

// split cleans a path into its parts; "" and "." are the root.
func split(p string) ([]string, error) {
	c := path.Clean("/" + strings.ReplaceAll(p, "\\", "/"))
	if c == "/" {
		return nil, nil
	}
	parts := strings.Split(strings.TrimPrefix(c, "/"), "/")
	for _, part := range parts {
		if part == ".git" {
			return nil, fmt.Errorf("%s: a path inside .git", p)
		}
	}
	return parts, nil
}

// dir walks to the folder of parts, loading it; with create, missing
// folders are made.
func (t *Tree) dir(parts []string, create bool) (*dirNode, error) {
	d := t.root
	for i, name := range parts {
		if sub := d.subs[name]; sub != nil {
			d = sub
			continue
		}
		e, ok := d.entries[name]
		switch {
		case !ok && !create:
			return nil, &fs.PathError{Op: "open", Path: strings.Join(parts[:i+1], "/"), Err: fs.ErrNotExist}
		case !ok:
			e = object.TreeEntry{Name: name, Mode: filemode.Dir}
			d.entries[name] = e
		case e.Mode != filemode.Dir:
			return nil, fmt.Errorf("%s is a file, not a folder", strings.Join(parts[:i+1], "/"))
		}
		sub, err := loadDir(t.s, e.Hash)
		if err != nil {
			return nil, err
		}
		d.subs[name] = sub
		d = sub
	}
	return d, nil
}

// ReadFile returns the content of a file.
func (t *Tree) ReadFile(p string) ([]byte, error) {
	parts, err := split(p)
	if err != nil {
		return nil, err
	}
	if len(parts) == 0 {
		return nil, fmt.Errorf("read %q: the repository root is a folder", p)
	}
	d, err := t.dir(parts[:len(parts)-1], false)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", p, err)
	}
	name := parts[len(parts)-1]
	e, ok := d.entries[name]
	if !ok {
		return nil, fmt.Errorf("read %s: %w", p, fs.ErrNotExist)
	}
	if !e.Mode.IsFile() {
		return nil, fmt.Errorf("read %s: not a regular file", p)
	}
	b, err := object.GetBlob(t.s, e.Hash)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", p, err)
	}
	r, err := b.Reader()
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", p, err)
	}
	defer r.Close()
	return io.ReadAll(r)
}

// WriteFile sets the content of a file, creating it and its folders as
// needed; an existing file keeps its mode (executable or not).
func (t *Tree) WriteFile(p string, data []byte) error {
	parts, err := split(p)
	if err != nil {
		return err
	}
	if len(parts) == 0 {
		return fmt.Errorf("write %q: not a file path", p)
	}
	d, err := t.dir(parts[:len(parts)-1], true)
	if err != nil {
		return fmt.Errorf("write %s: %w", p, err)
	}
	name := parts[len(parts)-1]
	mode := filemode.Regular
	if e, ok := d.entries[name]; ok {
		if e.Mode == filemode.Dir {
			return fmt.Errorf("write %s: it is a folder", p)
		}
		if e.Mode == filemode.Executable {
			mode = e.Mode
		}
	}
	obj := t.s.NewEncodedObject()
	obj.SetType(plumbing.BlobObject)
	w, err := obj.Writer()
	if err != nil {
		return fmt.Errorf("write %s: %w", p, err)
	}
	if _, err := w.Write(data); err != nil {
		return fmt.Errorf("write %s: %w", p, err)
	}
	if err := w.Close(); err != nil {
		return fmt.Errorf("write %s: %w", p, err)
	}
	h, err := t.s.SetEncodedObject(obj)
	if err != nil {
		return fmt.Errorf("write %s: %w", p, err)
	}
	d.entries[name] = object.TreeEntry{Name: name, Mode: mode, Hash: h}
	return nil
}

// Remove deletes a file or a folder.
func (t *Tree) Remove(p string) error {
	return t.setEntry(p, nil)
}

// CopyFrom makes p (a file or a folder; "" is the whole tree) equal to p in
// src, another commit's tree of the same repository; when src has no p, p is
// removed.
func (t *Tree) CopyFrom(src *object.Tree, p string) error {
	parts, err := split(p)
	if err != nil {
		return err
	}
	if len(parts) == 0 {
		d, err := loadDir(t.s, src.Hash)
		if err != nil {
			return err
		}
		t.root = d
		return nil
	}
	e, err := src.FindEntry(strings.Join(parts, "/"))
	if errors.Is(err, object.ErrEntryNotFound) || errors.Is(err, object.ErrDirectoryNotFound) {
		return t.setEntry(p, nil)
	}
	if err != nil {
		return fmt.Errorf("find %s: %w", p, err)
	}
	return t.setEntry(p, e)
}

func (t *Tree) setEntry(p string, e *object.TreeEntry) error {
	parts, err := split(p)
	if err != nil {
		return err
	}
	if len(parts) == 0 {
		return fmt.Errorf("%q: the repository root cannot be removed", p)
	}
	d, err := t.dir(parts[:len(parts)-1], e != nil)
	if err != nil {
		if e == nil && errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		return err
	}
	name := parts[len(parts)-1]
	delete(d.subs, name)
	if e == nil {
		delete(d.entries, name)
		return nil
	}
	d.entries[name] = object.TreeEntry{Name: name, Mode: e.Mode, Hash: e.Hash}
	return nil
}

// Hash writes the edited tree into the repository's storage and returns
// the hash of its root.
func (t *Tree) Hash() (plumbing.Hash, error) {
	return t.write(t.root)
}

func (t *Tree) write(d *dirNode) (plumbing.Hash, error) {
	for name, sub := range d.subs {
		h, err := t.write(sub)
		if err != nil {
			return plumbing.ZeroHash, err
		}
		if len(sub.entries) == 0 {
			delete(d.entries, name)
			continue
		}
		d.entries[name] = object.TreeEntry{Name: name, Mode: filemode.Dir, Hash: h}
	}
	entries := make([]object.TreeEntry, 0, len(d.entries))
	for _, e := range d.entries {
		entries = append(entries, e)
	}
	sort.Sort(object.TreeEntrySorter(entries))
	obj := t.s.NewEncodedObject()
	if err := (&object.Tree{Entries: entries}).Encode(obj); err != nil {
		return plumbing.ZeroHash, fmt.Errorf("encode tree: %w", err)
	}
	return t.s.SetEncodedObject(obj)
}

// FS returns a read-only view of the edited tree, for render.Render.
func (t *Tree) FS() (fs.FS, error) {
	h, err := t.Hash()
	if err != nil {
		return nil, err
	}
	tree, err := object.GetTree(t.s, h)
	if err != nil {
		return nil, fmt.Errorf("read tree %s: %w", h, err)
	}
	return source.TreeFS(tree, time.Time{}), nil
}

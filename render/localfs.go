package render

import (
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
)

// LocalFS is a folder of the local disk (a checkout) read as the guard
// reads a Git tree, for driftguard validate and diff: a symbolic link is
// listed as a link but never followed, neither as a file nor as a folder
// on the way to one (the guard does not follow the links a commit holds).
// Opening a path that is or goes through a link fails with a
// *SymlinkError naming the link and where it points, saying when that is
// outside the folder. Files are opened through an os.Root, so nothing
// outside the folder can be reached even if a link appears between the
// check and the open.
type LocalFS struct {
	root *os.Root
	dir  string // absolute
}

// OpenLocalFS opens dir for reading as a LocalFS. Close releases it.
func OpenLocalFS(dir string) (*LocalFS, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	root, err := os.OpenRoot(abs)
	if err != nil {
		return nil, err
	}
	return &LocalFS{root: root, dir: abs}, nil
}

// Close closes the folder.
func (l *LocalFS) Close() error { return l.root.Close() }

// SymlinkError is a path of a LocalFS that is, or goes through, a
// symbolic link.
type SymlinkError struct {
	Link    string // the link, slash-separated, relative to the folder
	Target  string // what it points to, as written
	Outside bool   // the target is outside the folder
}

func (e *SymlinkError) Error() string {
	if e.Outside {
		return fmt.Sprintf("%s is a symbolic link to %s, outside the checkout: not followed", e.Link, e.Target)
	}
	return fmt.Sprintf("%s is a symbolic link to %s: not followed (the guard does not follow links in Git either)", e.Link, e.Target)
}

// Open opens name, a slash-separated path relative to the folder.
func (l *LocalFS) Open(name string) (fs.File, error) {
	if !fs.ValidPath(name) {
		return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrInvalid}
	}
	if name != "." {
		parts := strings.Split(name, "/")
		for i := range parts {
			p := strings.Join(parts[:i+1], "/")
			info, err := l.root.Lstat(filepath.FromSlash(p))
			if err != nil {
				return nil, &fs.PathError{Op: "open", Path: name, Err: UnwrapPathError(err)}
			}
			if info.Mode()&fs.ModeSymlink != 0 {
				return nil, &fs.PathError{Op: "open", Path: name, Err: l.symlinkError(p)}
			}
		}
	}
	f, err := l.root.Open(filepath.FromSlash(name))
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: name, Err: UnwrapPathError(err)}
	}
	return f, nil
}

// symlinkError describes the link p.
func (l *LocalFS) symlinkError(p string) error {
	target, err := l.root.Readlink(filepath.FromSlash(p))
	if err != nil {
		return &SymlinkError{Link: p, Target: "?", Outside: true}
	}
	return &SymlinkError{Link: p, Target: target, Outside: l.outside(p, target)}
}

// outside reports whether the link p's target leaves the folder (as
// written: a target that goes through further links counts as inside
// when its text stays inside, but it is not followed either way).
func (l *LocalFS) outside(p, target string) bool {
	t := filepath.ToSlash(target)
	if filepath.IsAbs(target) {
		rel, err := filepath.Rel(l.dir, filepath.Clean(target))
		return err != nil || rel == ".." || strings.HasPrefix(filepath.ToSlash(rel), "../")
	}
	joined := path.Join(path.Dir(p), t)
	return joined == ".." || strings.HasPrefix(joined, "../")
}

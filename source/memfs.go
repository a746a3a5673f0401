package source

import (
	"errors"
	"io"
	"io/fs"
	"path"
	"slices"
	"strings"
	"time"
)

// memFS is a read-only fs.FS over files held in memory: the content of an
// artifact or of a bucket prefix. Folders are implied by the file paths.
type memFS struct {
	files map[string][]byte
	dirs  map[string][]string // folder -> names of its entries, sorted
	when  time.Time
}

// newMemFS returns a memFS of files (slash-separated paths, no leading
// slash, no "." or ".." elements).
func newMemFS(files map[string][]byte, when time.Time) *memFS {
	m := &memFS{files: files, dirs: map[string][]string{".": nil}, when: when}
	for p := range files {
		for {
			dir, name := path.Dir(p), path.Base(p)
			_, known := m.dirs[dir]
			if !slices.Contains(m.dirs[dir], name) {
				m.dirs[dir] = append(m.dirs[dir], name)
			}
			if known || dir == "." {
				break
			}
			p = dir
		}
	}
	for d := range m.dirs {
		slices.Sort(m.dirs[d])
	}
	return m
}

func (m *memFS) Open(name string) (fs.File, error) {
	if !fs.ValidPath(name) {
		return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrInvalid}
	}
	if data, ok := m.files[name]; ok {
		return &memFile{info: m.info(name), r: strings.NewReader(string(data))}, nil
	}
	if _, ok := m.dirs[name]; ok {
		return &memDir{info: m.info(name), fsys: m, name: name}, nil
	}
	return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrNotExist}
}

func (m *memFS) ReadFile(name string) ([]byte, error) {
	if data, ok := m.files[name]; ok {
		return slices.Clone(data), nil
	}
	return nil, &fs.PathError{Op: "read", Path: name, Err: fs.ErrNotExist}
}

func (m *memFS) info(name string) memInfo {
	if data, ok := m.files[name]; ok {
		return memInfo{name: path.Base(name), size: int64(len(data)), mode: 0o444, when: m.when}
	}
	return memInfo{name: path.Base(name), mode: fs.ModeDir | 0o555, when: m.when}
}

type memInfo struct {
	name string
	size int64
	mode fs.FileMode
	when time.Time
}

func (i memInfo) Name() string               { return i.name }
func (i memInfo) Size() int64                { return i.size }
func (i memInfo) Mode() fs.FileMode          { return i.mode }
func (i memInfo) ModTime() time.Time         { return i.when }
func (i memInfo) IsDir() bool                { return i.mode.IsDir() }
func (i memInfo) Sys() any                   { return nil }
func (i memInfo) Type() fs.FileMode          { return i.mode.Type() }
func (i memInfo) Info() (fs.FileInfo, error) { return i, nil }

type memFile struct {
	info memInfo
	r    *strings.Reader
}

func (f *memFile) Stat() (fs.FileInfo, error) { return f.info, nil }
func (f *memFile) Read(p []byte) (int, error) { return f.r.Read(p) }
func (f *memFile) Close() error               { return nil }

type memDir struct {
	info memInfo
	fsys *memFS
	name string
	pos  int
}

func (d *memDir) Stat() (fs.FileInfo, error) { return d.info, nil }
func (d *memDir) Read([]byte) (int, error) {
	return 0, &fs.PathError{Op: "read", Path: d.name, Err: errors.New("is a directory")}
}
func (d *memDir) Close() error { return nil }

func (d *memDir) ReadDir(n int) ([]fs.DirEntry, error) {
	names := d.fsys.dirs[d.name][d.pos:]
	if n > 0 && len(names) == 0 {
		return nil, io.EOF
	}
	if n > 0 && n < len(names) {
		names = names[:n]
	}
	out := make([]fs.DirEntry, len(names))
	for i, name := range names {
		out[i] = d.fsys.info(path.Join(d.name, name))
	}
	d.pos += len(names)
	return out, nil
}

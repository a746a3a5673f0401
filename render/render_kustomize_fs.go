package render

import (
	"errors"
	"fmt"
	"io/fs"
	"path"
	"path/filepath"
	"strings"

	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/api/resmap"
	"sigs.k8s.io/kustomize/kyaml/filesys"
)

// kustomizeFS is the file system Kustomize builds on: Kustomize's
// in-memory file system holding the revision's folders and the names of
// its files (below /, .git left out), and the content of a file read from
// the tree only when Kustomize reads it, within the render's limits (the
// file's size, the bytes of the render, each read counted, so that a base
// that many overlays include costs each time), decrypted when it is
// SOPS-encrypted, and decoded once as YAML against the decoding limits
// (nesting, alias values, decoded text) before Kustomize parses it. It has
// no disk and no network behind it.
type kustomizeFS struct {
	filesys.FileSystem // folders, and files that are empty until read

	r       *renderer
	content map[string][]byte // files read, by repository path, decrypted
	raw     map[string][]byte // encrypted files as in the tree, for lines
	written map[string]bool   // files the guard wrote (requestOrigins)
	// undecrypted holds, by repository path, why an encrypted file could
	// not be decrypted; Kustomize reads it encrypted, and only an object
	// that comes from it is an error.
	undecrypted map[string]error
	// failed is the first read that went beyond a limit: the error of the
	// build, whatever Kustomize made of it.
	failed error
}

// kustomizeTree lists the tree into Kustomize's file system, once per
// render.
func (r *renderer) kustomizeTree() (*kustomizeFS, error) {
	if r.kfs != nil || r.kfsErr != nil {
		return r.kfs, r.kfsErr
	}
	k := &kustomizeFS{FileSystem: filesys.MakeFsInMemory(), r: r, content: map[string][]byte{}, raw: map[string][]byte{},
		written: map[string]bool{}, undecrypted: map[string]error{}}
	err := walkWithin(r.fsys, ".", r.lim.MaxFiles, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return &RenderError{Path: p, Err: UnwrapPathError(err)}
		}
		if d.IsDir() {
			if p != "." && d.Name() == ".git" {
				return fs.SkipDir
			}
			return k.MkdirAll("/" + p)
		}
		if !d.Type().IsRegular() {
			return nil
		}
		return k.FileSystem.WriteFile("/"+p, nil)
	})
	if err != nil {
		r.kfsErr = err // once per render: every kustomization would list it again
		return nil, err
	}
	r.kfs = k
	return k, nil
}

// build runs Kustomize on the kustomization in dir. A read that went
// beyond a limit is the error, rather than what Kustomize made of it.
func (k *kustomizeFS) build(opts *krusty.Options, dir string) (rm resmap.ResMap, err error) {
	k.failed = nil
	defer func() {
		if v := recover(); v != nil {
			rm, err = nil, fmt.Errorf("kustomize failed: %v", v)
		}
		if k.failed != nil {
			rm, err = nil, k.failed
		}
	}()
	return krusty.MakeKustomizer(opts).Run(k, "/"+dir)
}

// repoPath turns a path of the file system into a repository path, "" when
// it is not in the repository.
func (k *kustomizeFS) repoPath(name string) string {
	p := filepath.ToSlash(filepath.Clean(name))
	if !strings.HasPrefix(p, "/") {
		return ""
	}
	return CleanDir(p)
}

// ReadFile reads a file of the revision, within the limits.
func (k *kustomizeFS) ReadFile(name string) ([]byte, error) {
	p := k.repoPath(name)
	if p == "" || k.written[p] || !k.Exists(name) || k.IsDir(name) {
		return k.FileSystem.ReadFile(name) // its own answer and errors
	}
	if err := k.r.count(p, 0); err != nil {
		return nil, k.fail(err)
	}
	if data, ok := k.content[p]; ok {
		if err := k.r.count(p, len(data)); err != nil {
			return nil, k.fail(err)
		}
		return data, nil
	}
	data, err := k.r.read(p)
	if err != nil {
		var le *LimitError
		if errors.As(err, &le) {
			return nil, k.fail(err)
		}
		return nil, err
	}
	if manifestFormat(p) != "" && isSOPS(p, data) {
		if plain, err := k.r.keys.decrypt(p, data, k.r.lim); err == nil {
			k.raw[p] = data
			data = plain
		} else {
			var le *LimitError
			if errors.As(err, &le) {
				return nil, k.fail(&RenderError{Path: p, Err: err})
			}
			k.undecrypted[p] = err
		}
	}
	if err := k.r.checkDecode(p, data); err != nil {
		return nil, k.fail(err)
	}
	k.content[p] = data
	return data, nil
}

// fail records the first read that went beyond a limit.
func (k *kustomizeFS) fail(err error) error {
	if k.failed == nil {
		k.failed = err
	}
	return err
}

// Open opens a file of the revision for reading, as ReadFile reads it.
func (k *kustomizeFS) Open(name string) (filesys.File, error) {
	data, err := k.ReadFile(name)
	if err != nil {
		return nil, err
	}
	one := filesys.MakeFsInMemory()
	f := "/" + path.Base(filepath.ToSlash(name))
	if err := one.WriteFile(f, data); err != nil {
		return nil, err
	}
	return one.Open(f)
}

// WriteFile replaces a file for the rest of the render; the guard writes
// kustomizations it asks for origin annotations in.
func (k *kustomizeFS) WriteFile(name string, data []byte) error {
	if p := k.repoPath(name); p != "" {
		k.written[p] = true
	}
	return k.FileSystem.WriteFile(name, data)
}

// linesSource returns the text of file p as it is in the tree, when
// Kustomize read it: encrypted files as encrypted, so that lines are those
// in Git.
func (k *kustomizeFS) linesSource(p string) ([]byte, bool) {
	if data, ok := k.raw[p]; ok {
		return data, true
	}
	data, ok := k.content[p]
	return data, ok
}

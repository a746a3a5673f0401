package gitstore

import (
	"errors"
	"io/fs"
	"path"
)

// maxRenderErrors bounds the problems one render reports.
const maxRenderErrors = 50

// renderer is one render of one path: the tree, the options, and the
// problems found so far. Rendering goes on after a problem where the rest
// can still be read, so that a person (or driftguard validate) sees every
// problem at once.
type renderer struct {
	fsys fs.FS
	src  Source
	opts RenderOptions
	keys ageKeys

	errs    []*RenderError
	dropped int

	kfs      *kustomizeFS       // the tree copied for Kustomize, made once
	fileDocs map[string][]docAt // documents of files, to find an object's line
}

func newRenderer(fsys fs.FS, src Source, opts RenderOptions) (*renderer, error) {
	keys, err := parseAgeKeys(opts.AgeKeys)
	if err != nil {
		return nil, err
	}
	for name := range opts.Vars {
		if err := CheckVarName(name); err != nil {
			return nil, err
		}
	}
	return &renderer{fsys: fsys, src: src, opts: opts, keys: keys}, nil
}

// fail records a problem; err is a *RenderError or RenderErrors, anything
// else is recorded against the repository root.
func (r *renderer) fail(err error) {
	var list RenderErrors
	var one *RenderError
	switch {
	case errors.As(err, &list):
		for _, e := range list {
			r.fail(e)
		}
		return
	case errors.As(err, &one):
	default:
		one = &RenderError{Path: ".", Err: err}
	}
	if len(r.errs) >= maxRenderErrors {
		r.dropped++
		return
	}
	r.errs = append(r.errs, one)
}

// err returns the problems recorded: nil, a *RenderError or RenderErrors.
func (r *renderer) err() error {
	switch len(r.errs) {
	case 0:
		return nil
	case 1:
		return r.errs[0]
	}
	out := RenderErrors(r.errs)
	if r.dropped > 0 {
		out = append(out, &RenderError{Path: r.errs[0].Path, Err: errors.New(plural(r.dropped, "more problem") + " not shown")})
	}
	return out
}

// repoPath joins a path relative to folder dir of the repository.
func repoPath(dir, rel string) string { return cleanDir(path.Join(dir, rel)) }

package render

import (
	"encoding/base64"
	"errors"
	"strings"

	"fmt"
	"github.com/driftguard/driftguard/redact"
	"io"
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
	lim  Limits // opts.Limits with the process's and the defaults

	total     int64 // bytes read so far
	overTotal bool  // the total went beyond lim.MaxTotalBytes (reported once)
	// transient is a failure of the machine rather than of the revision
	// (the Helm process could not start): the render is an error that is
	// not a RenderError, so that it is tried again.
	transient error

	errs    []*RenderError
	dropped int

	// sensitive are the values the render must not let out in clear:
	// decrypted SOPS values, the age keys, variables from Secrets, the
	// data of Secrets it renders. Every object it returns carries them.
	sensitive *redact.Sensitive

	kfs      *kustomizeFS       // the tree copied for Kustomize, made once
	kfsErr   error              // why it could not be
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
	sensitive := &redact.Sensitive{}
	keys.sensitive = sensitive
	for _, k := range opts.AgeKeys {
		for line := range strings.Lines(k) {
			// The identities, not the comments (the public key, a date).
			if line = strings.TrimSpace(line); strings.HasPrefix(line, "AGE-SECRET-KEY-") {
				sensitive.Add(line)
			}
		}
	}
	for _, c := range opts.Credentials {
		sensitive.Add(c)
	}
	for _, name := range opts.SecretVars {
		if v, ok := opts.Vars[name]; ok {
			sensitive.Add(v)
		}
	}
	return &renderer{fsys: fsys, src: src, opts: opts, keys: keys, lim: opts.Limits.effective(), sensitive: sensitive}, nil
}

// read reads file p of the tree within the limits: the file's size and
// the bytes of the whole render. Errors are a *RenderError naming p.
func (r *renderer) read(p string) ([]byte, error) {
	if r.overTotal {
		return nil, errOverTotal
	}
	f, err := r.fsys.Open(p)
	if err != nil {
		return nil, &RenderError{Path: p, Err: fmt.Errorf("read: %w", UnwrapPathError(err))}
	}
	defer func() { _ = f.Close() }()
	if info, err := f.Stat(); err == nil && info.Mode().IsRegular() && info.Size() > r.lim.MaxFileBytes {
		return nil, &RenderError{Path: p, Err: fileSizeError(r.lim.MaxFileBytes)}
	}
	data, err := io.ReadAll(io.LimitReader(f, r.lim.MaxFileBytes+1))
	if err != nil {
		return nil, &RenderError{Path: p, Err: fmt.Errorf("read: %w", UnwrapPathError(err))}
	}
	if int64(len(data)) > r.lim.MaxFileBytes {
		return nil, &RenderError{Path: p, Err: fileSizeError(r.lim.MaxFileBytes)}
	}
	if err := r.count(p, len(data)); err != nil {
		return nil, err
	}
	return data, nil
}

// count adds n bytes read from p to the render's total.
func (r *renderer) count(p string, n int) error {
	if r.overTotal {
		return errOverTotal
	}
	if r.total += int64(n); r.total > r.lim.MaxTotalBytes {
		r.overTotal = true
		return &RenderError{Path: p, Err: totalSizeError(r.lim.MaxTotalBytes)}
	}
	return nil
}

// errOverTotal is the error of every read after the render went beyond
// its total: fail drops it, the first read's error said it.
var errOverTotal = &RenderError{Path: ".", Err: errors.New("the render read too much")}

// decode decodes file p (YAML, or JSON by its name) within the limits.
func (r *renderer) decode(p string, data []byte) ([]document, error) {
	if manifestFormat(p) == "json" {
		return decodeJSON(data, r.lim)
	}
	return decodeYAML(data, r.lim)
}

// checkDecode reports a *RenderError when file p, decoded as YAML (JSON is
// YAML), goes beyond the render's decoding limits. A file that does not
// parse is no error here: it is left to whoever reads it (a Helm values
// file, a file of a ConfigMap generator may be anything).
func (r *renderer) checkDecode(p string, data []byte) error {
	_, err := decodeYAML(data, r.lim)
	var le *LimitError
	if err != nil && errors.As(err, &le) {
		return fileError(p, err)
	}
	return nil
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
		if one == errOverTotal {
			return
		}
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
// Their messages never hold a sensitive value of the render (a decoder's
// error may quote a decrypted or substituted value).
func (r *renderer) err() error {
	if r.sensitive.Len() > 0 {
		for i, e := range r.errs {
			r.errs[i] = r.scrub(e)
		}
	}
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

// scrub returns e with its message scrubbed of the render's sensitive
// values; errors.Is and errors.As still see what it wraps.
func (r *renderer) scrub(e *RenderError) *RenderError {
	msg := e.Err.Error()
	if clean := r.sensitive.Scrub(msg); clean != msg {
		return &RenderError{Path: e.Path, Line: e.Line, Err: &scrubbedError{msg: clean, err: e.Err}}
	}
	return e
}

// scrubbedError is an error whose message had secret values taken out.
type scrubbedError struct {
	msg string
	err error
}

func (e *scrubbedError) Error() string { return e.msg }
func (e *scrubbedError) Unwrap() error { return e.err }

// markSensitive adds the data of the Secrets among objs to the render's
// sensitive values, and gives every object the render's values.
func (r *renderer) markSensitive(objs []*Object) {
	for _, o := range objs {
		if o.Key.Group != "" || o.Key.Kind != "Secret" {
			continue
		}
		u := o.Obj().Object
		if data, ok := u["data"].(map[string]any); ok {
			for _, v := range data {
				s, _ := v.(string)
				if b, err := base64.StdEncoding.DecodeString(s); err == nil {
					r.sensitive.Add(string(b))
				} else {
					r.sensitive.Add(s)
				}
			}
		}
		if data, ok := u["stringData"].(map[string]any); ok {
			r.sensitive.AddValue(data)
		}
	}
	if r.sensitive.Len() == 0 {
		return
	}
	for _, o := range objs {
		o.sensitive = r.sensitive
	}
}

// repoPath joins a path relative to folder dir of the repository.
func repoPath(dir, rel string) string { return CleanDir(path.Join(dir, rel)) }

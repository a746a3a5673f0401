package render

import (
	"errors"
	"fmt"
	"io/fs"
	"path"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/driftguard/driftguard/jsonvalue"
	"github.com/driftguard/driftguard/redact"
)

// Render renders dir of fsys with the default options: no variable
// substitution, no decryption, Helm release "release" in "default". See
// RenderWith.
func Render(fsys fs.FS, dir string, src Source) ([]*Object, error) {
	return RenderWith(fsys, dir, src, RenderOptions{})
}

// RenderWith reads the manifests below dir of fsys (the checked-out tree;
// "" and "." are its root) and returns their objects.
//
// A dir holding a kustomization.yaml (or kustomization.yml, or
// Kustomization) is built with Kustomize; a dir holding a Chart.yaml is
// rendered as a Helm chart with opts.Helm. Any other dir is walked: files
// ending in .yaml or .yml hold YAML documents separated by ---, files
// ending in .json JSON values; other files, and files and folders whose name
// starts with a dot (.git, .github), are ignored; a folder below dir that
// holds a kustomization is built with Kustomize in place of its files (as
// Flux does). Objects come in file order: paths sorted, then document
// order. Empty documents are skipped; a List (kind List or *List with
// items) expands to its items. Every object needs apiVersion, kind and
// metadata.name (or metadata.generateName, which only a hook may use).
//
// SOPS-encrypted files are decrypted in memory with opts.AgeKeys before
// anything else reads them. With opts.Vars set, ${VAR} is then substituted
// in every object.
//
// src is a template: URL and Revision are copied into every object's Source,
// Path and Line are set per object (for Kustomize output the file the object
// comes from, or the kustomization; for Helm output the chart's template).
// Errors are a *RenderError, or RenderErrors when there are several; fsys
// is only read.
func RenderWith(fsys fs.FS, dir string, src Source, opts RenderOptions) ([]*Object, error) {
	objs, err := RenderAll(fsys, dir, src, opts)
	if err != nil {
		return nil, err
	}
	return objs, nil
}

// RenderAll is RenderWith that also returns, next to the problems, every
// object that did render, so that a check (driftguard validate) can go on
// with them. Objects of a kustomization or chart that fails are missing.
// An error that is not a *RenderError or RenderErrors (a bad age key, a bad
// variable name, a Helm process that could not start) comes with no
// objects.
func RenderAll(fsys fs.FS, dir string, src Source, opts RenderOptions) (objs []*Object, err error) {
	r, err := newRenderer(fsys, src, opts)
	if err != nil {
		return nil, err
	}
	// A bug that panics on some input fails this render, not the process
	// that renders every Guard.
	defer func() {
		if v := recover(); v != nil {
			objs, err = nil, r.scrub(&RenderError{Path: CleanDir(dir), Err: fmt.Errorf("render failed: %v", v)})
		}
	}()
	objs = r.render(CleanDir(dir))
	if r.transient != nil {
		return nil, r.transient
	}
	if opts.substitute() {
		objs = r.substituteAll(objs)
	}
	r.markSensitive(objs)
	if n, size := r.sensitive.Len(), r.sensitive.Size(); n > redact.MaxSecretValues || size > redact.MaxSecretBytes {
		return nil, &RenderError{Path: CleanDir(dir), Err: fmt.Errorf("the revision holds %d secret values (%d bytes: decrypted, from Secrets, or data of Secrets), more than the guard keeps track of (%d values, %d bytes) to keep them out of records and messages", n, size, redact.MaxSecretValues, redact.MaxSecretBytes)}
	}
	return objs, r.err()
}

// render renders root: one file, a kustomization, a chart or a tree.
func (r *renderer) render(root string) []*Object {
	info, err := fs.Stat(r.fsys, root)
	if err != nil {
		err = UnwrapPathError(err)
		var link *SymlinkError
		if !errors.As(err, &link) {
			err = fmt.Errorf("path not found in the repository: %w", err)
		}
		r.fail(&RenderError{Path: root, Err: err})
		return nil
	}
	if !info.IsDir() {
		return r.renderFile(root)
	}
	if k := kustomizationFile(r.fsys, root); k != "" {
		return r.kustomize(root, k)
	}
	if isChart(r.fsys, root) {
		return r.helm(root)
	}

	// A unit is a file, or a folder built with Kustomize, sorted by the
	// path of the file (the kustomization's for a folder).
	type unit struct{ path, kustomize string }
	var units []unit
	err = walkWithin(r.fsys, root, r.lim.MaxFiles, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			r.fail(&RenderError{Path: p, Err: UnwrapPathError(err)})
			return nil
		}
		if p == root {
			return nil
		}
		if strings.HasPrefix(d.Name(), ".") {
			if d.IsDir() {
				return fs.SkipDir
			}
			return nil
		}
		if d.IsDir() {
			if k := kustomizationFile(r.fsys, p); k != "" {
				units = append(units, unit{path: k, kustomize: p})
				return fs.SkipDir
			}
			if isChart(r.fsys, p) {
				r.fail(&RenderError{Path: path.Join(p, chartFile), Err: fmt.Errorf("a Helm chart below the rendered path is not rendered; set the Guard's path to %s to render it", p)})
				return fs.SkipDir
			}
			return nil
		}
		if d.Type().IsRegular() && manifestFormat(p) != "" {
			units = append(units, unit{path: p})
		}
		return nil
	})
	if err != nil {
		r.fail(&RenderError{Path: root, Err: err})
		return nil
	}
	sort.Slice(units, func(i, j int) bool { return units[i].path < units[j].path })

	var objs []*Object
	for _, u := range units {
		if u.kustomize != "" {
			objs = append(objs, r.kustomize(u.kustomize, u.path)...)
			continue
		}
		objs = append(objs, r.renderFile(u.path)...)
	}
	return objs
}

// CleanDir turns a repository path into an fs.FS path.
func CleanDir(dir string) string {
	d := path.Clean("/" + strings.ReplaceAll(dir, "\\", "/"))
	if d == "/" {
		return "."
	}
	return strings.TrimPrefix(d, "/")
}

func manifestFormat(p string) string {
	switch strings.ToLower(path.Ext(p)) {
	case ".yaml", ".yml":
		return "yaml"
	case ".json":
		return "json"
	}
	return ""
}

func UnwrapPathError(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// renderFile renders one manifest file, decrypted when it is
// SOPS-encrypted; a decrypted file's objects keep the lines of the
// encrypted documents, which are the lines in Git.
func (r *renderer) renderFile(p string) []*Object {
	data, encLines, err := r.readManifest(p)
	if err != nil {
		r.fail(err)
		return nil
	}
	docs, err := r.decode(p, data)
	if err != nil {
		if encLines != nil {
			// A line of the decrypted text points nowhere in Git.
			r.fail(&RenderError{Path: p, Err: fmt.Errorf("decrypted content: %w", err)})
			return nil
		}
		r.fail(fileError(p, err))
		return nil
	}
	if encLines != nil {
		for i := range docs {
			docs[i].line, docs[i].itemLines = 1, nil
			if i < len(encLines) {
				docs[i].line = encLines[i]
			}
		}
	}
	return r.documentsObjects(p, docs, func(err error) error { return fileError(p, err) })
}

// documentsObjects checks each of docs and expands Lists (documentObjects),
// every object naming path p and the line its document gives. A document
// that fails is reported as docErr makes its error, and left out.
func (r *renderer) documentsObjects(p string, docs []document, docErr func(error) error) []*Object {
	var objs []*Object
	for _, doc := range docs {
		got, err := documentObjects(doc.value, doc.line, doc.itemLines)
		if err != nil {
			r.fail(docErr(err))
			continue
		}
		for _, o := range got {
			o.Source = Source{URL: r.src.URL, Revision: r.src.Revision, Path: p, Line: o.Source.Line}
		}
		objs = append(objs, got...)
	}
	return objs
}

func fileError(p string, err error) error {
	var le *lineError
	if errors.As(err, &le) {
		return &RenderError{Path: p, Line: le.line, Err: le.err}
	}
	return &RenderError{Path: p, Err: err}
}

// documentObjects checks one document and expands a List into its items.
// itemLines, when known, are the lines of the List's items.
func documentObjects(v any, line int, itemLines []int) ([]*Object, error) {
	m, ok := v.(map[string]any)
	if !ok {
		return nil, errAt(line, "document is a %s, not an object", jsonvalue.Name(v))
	}
	kind, _ := m["kind"].(string)
	if items, isList := m["items"].([]any); isList && (kind == "List" || strings.HasSuffix(kind, "List")) {
		var objs []*Object
		for i, item := range items {
			l := line
			if i < len(itemLines) {
				l = itemLines[i]
			}
			got, err := documentObjects(item, l, nil)
			if err != nil {
				return nil, err
			}
			objs = append(objs, got...)
		}
		return objs, nil
	}
	if err := validate(m); err != nil {
		return nil, errAt(line, "%w", err)
	}
	u := &unstructured.Unstructured{Object: m}
	return []*Object{NewObject(u, Source{Line: line})}, nil
}

// validate checks the fields every object needs.
func validate(m map[string]any) error {
	var missing []string
	for _, f := range []string{"apiVersion", "kind"} {
		if s, ok := m[f].(string); !ok || s == "" {
			missing = append(missing, f)
		}
	}
	meta, isMap := m["metadata"].(map[string]any)
	if _, set := m["metadata"]; set && !isMap {
		return errors.New("metadata is not an object")
	}
	// A hook (a Job run at a phase of the sync) may name only a prefix:
	// the guard creates it, and the API server completes the name.
	// Whether an object may do without a name is the reconciler's call.
	name, _ := meta["name"].(string)
	if generate, _ := meta["generateName"].(string); name == "" && generate == "" {
		missing = append(missing, "metadata.name")
	}
	if ns, set := meta["namespace"]; set {
		if _, ok := ns.(string); !ok {
			return errors.New("metadata.namespace is not a string")
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("object lacks %s", strings.Join(missing, ", "))
	}
	return nil
}

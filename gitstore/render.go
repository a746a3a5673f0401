package gitstore

import (
	"errors"
	"fmt"
	"io/fs"
	"path"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// Render reads the manifests below dir of fsys (the checked-out tree; ""
// and "." are its root) and returns their objects in file order: files
// sorted by path, then document order.
//
// Files ending in .yaml or .yml hold YAML documents separated by ---, files
// ending in .json JSON values; other files, and files and folders whose name
// starts with a dot (.git, .github), are ignored. Empty documents are
// skipped; a List (kind List or *List with items) expands to its items. Every
// object needs apiVersion, kind and metadata.name.
//
// src is a template: URL and Revision are copied into every object's Source,
// Path and Line are set per object. Errors are *RenderError.
func Render(fsys fs.FS, dir string, src Source) ([]*Object, error) {
	root := cleanDir(dir)
	info, err := fs.Stat(fsys, root)
	if err != nil {
		return nil, &RenderError{Path: root, Err: fmt.Errorf("path not found in the repository: %w", unwrapPathError(err))}
	}

	var files []string
	if !info.IsDir() {
		files = []string{root}
	} else {
		err = fs.WalkDir(fsys, root, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return &RenderError{Path: p, Err: unwrapPathError(err)}
			}
			if p != root && strings.HasPrefix(d.Name(), ".") {
				if d.IsDir() {
					return fs.SkipDir
				}
				return nil
			}
			if d.Type().IsRegular() && manifestFormat(p) != "" {
				files = append(files, p)
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	sort.Strings(files)

	var objs []*Object
	for _, p := range files {
		got, err := renderFile(fsys, p, src)
		if err != nil {
			return nil, err
		}
		objs = append(objs, got...)
	}
	return objs, nil
}

// cleanDir turns a repository path into an fs.FS path.
func cleanDir(dir string) string {
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

func unwrapPathError(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

func renderFile(fsys fs.FS, p string, src Source) ([]*Object, error) {
	data, err := fs.ReadFile(fsys, p)
	if err != nil {
		return nil, &RenderError{Path: p, Err: fmt.Errorf("read: %w", unwrapPathError(err))}
	}
	var docs []document
	if manifestFormat(p) == "json" {
		docs, err = decodeJSON(data)
	} else {
		docs, err = decodeYAML(data)
	}
	if err != nil {
		return nil, fileError(p, err)
	}
	var objs []*Object
	for _, doc := range docs {
		got, err := documentObjects(doc.value, doc.line, doc.itemLines)
		if err != nil {
			return nil, fileError(p, err)
		}
		for _, o := range got {
			o.Source = Source{URL: src.URL, Revision: src.Revision, Path: p, Line: o.Source.Line}
		}
		objs = append(objs, got...)
	}
	return objs, nil
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
		return nil, errAt(line, "document is a %s, not an object", typeName(v))
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
	return []*Object{{Key: KeyOf(u), Obj: u, Source: Source{Line: line}}}, nil
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
	if name, ok := meta["name"].(string); !ok || name == "" {
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

func typeName(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case []any:
		return "list"
	case string:
		return "string"
	case bool:
		return "bool"
	case int64, float64:
		return "number"
	}
	return fmt.Sprintf("%T", v)
}

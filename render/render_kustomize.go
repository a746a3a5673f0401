package render

import (
	"errors"
	"fmt"
	"io/fs"
	"path"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/api/types"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	"sigs.k8s.io/yaml"
)

// kustomizationFiles are the names Kustomize looks for, in its order.
var kustomizationFiles = []string{"kustomization.yaml", "kustomization.yml", "Kustomization"}

// originAnnotation is where Kustomize records the file a resource comes
// from when buildMetadata holds originAnnotations.
const originAnnotation = "config.kubernetes.io/origin"

// kustomizationFile returns the path of the kustomization file in dir, or "".
func kustomizationFile(fsys fs.FS, dir string) string {
	for _, name := range kustomizationFiles {
		p := path.Join(dir, name)
		if info, err := fs.Stat(fsys, p); err == nil && info.Mode().IsRegular() {
			return p
		}
	}
	return ""
}

// kustomize builds the kustomization in dir (kfile is its file) with
// krusty, as `kustomize build` does. Our copy of Kustomize
// (third_party/kustomize-api) cannot fetch a remote file, clone a remote
// base, inflate a Helm chart or run a plugin program: each is an error.
func (r *renderer) kustomize(dir, kfile string) []*Object {
	kfs, err := r.kustomizeTree()
	if err != nil {
		r.fail(err)
		return nil
	}
	userOrigins, err := requestOrigins(kfs, kfile)
	var re *RenderError
	switch {
	case errors.As(err, &re):
		r.fail(re) // beyond a limit, or unreadable
		return nil
	case err != nil:
		r.fail(&RenderError{Path: kfile, Err: err})
		return nil
	}
	opts := &krusty.Options{
		Reorder:           krusty.ReorderOptionNone,
		AddManagedbyLabel: false,
		// The in-memory tree holds only the repository: a reference that
		// leaves a kustomization's folder stays inside it.
		LoadRestrictions: types.LoadRestrictionsNone,
		PluginConfig:     types.DisabledPluginConfig(),
	}
	rm, err := kfs.build(opts, dir)
	var limit *RenderError
	switch {
	case errors.As(err, &limit):
		r.fail(limit) // a file beyond a limit, or that cannot be read
		return nil
	case err != nil:
		r.fail(r.kustomizeError(dir, kfile, err))
		return nil
	}

	var objs []*Object
	for _, res := range rm.Resources() {
		m, err := res.Map()
		if err != nil {
			r.fail(&RenderError{Path: kfile, Err: fmt.Errorf("kustomize output %s: %w", res.CurId(), err)})
			continue
		}
		where, line := kfile, 0
		origin, _ := res.GetOrigin()
		if origin != nil && origin.Repo == "" {
			switch {
			case origin.Path != "":
				where = repoPath(dir, origin.Path)
				line = r.lineOf(where, res.GetKind(), res.GetName())
			case origin.ConfiguredIn != "":
				where = repoPath(dir, origin.ConfiguredIn)
			}
		}
		if !userOrigins {
			dropAnnotation(m, originAnnotation)
		}
		if _, encrypted := m["sops"]; encrypted {
			reason := kfs.undecrypted[where]
			if reason == nil {
				reason = errors.New("the object is SOPS-encrypted and was not decrypted")
			}
			r.fail(&RenderError{Path: where, Line: line, Err: reason})
			continue
		}
		if err := validate(m); err != nil {
			r.fail(&RenderError{Path: where, Line: line, Err: err})
			continue
		}
		u := &unstructured.Unstructured{Object: m}
		objs = append(objs, NewObject(u, Source{URL: r.src.URL, Revision: r.src.Revision, Path: where, Line: line}))
	}
	return objs
}

// requestOrigins turns on Kustomize's origin annotations in the
// kustomization at kfile, so that every object names the file it comes
// from. It reports whether the kustomization asked for them itself (then
// they stay on the objects). A kustomization that does not parse is left
// for Kustomize to report.
func requestOrigins(mem filesys.FileSystem, kfile string) (bool, error) {
	data, err := mem.ReadFile("/" + kfile)
	if err != nil {
		return false, err
	}
	var k map[string]any
	if err := yaml.Unmarshal(data, &k); err != nil || k == nil {
		return false, nil //nolint:nilerr // Kustomize reports it with its own words
	}
	meta, _ := k["buildMetadata"].([]any)
	if slices.Contains(meta, any(types.OriginAnnotations)) {
		return true, nil
	}
	k["buildMetadata"] = append(meta, types.OriginAnnotations)
	out, err := yaml.Marshal(k)
	if err != nil {
		return false, err
	}
	return false, mem.WriteFile("/"+kfile, out)
}

func dropAnnotation(m map[string]any, key string) {
	md, _ := m["metadata"].(map[string]any)
	ann, _ := md["annotations"].(map[string]any)
	if ann == nil {
		return
	}
	delete(ann, key)
	if len(ann) == 0 {
		delete(md, "annotations")
	}
}

var (
	kustomizeAccumulateRE = regexp.MustCompile(`accumulating resources from '([^']+)'`)
	kustomizeYAMLLineRE   = regexp.MustCompile(`^invalid Kustomization: yaml: line (\d+): `)
	// kustomizeRemoteRE finds a reference our copy of Kustomize's loader
	// refused to fetch or clone, and the folder of the kustomization that
	// names it (third_party/kustomize-api/internal/loader/errors.go).
	kustomizeRemoteRE = regexp.MustCompile(`("(?:[^"\\]|\\.)*") is remote \(kustomization folder ("(?:[^"\\]|\\.)*")\)`)
)

// kustomizeHelmRefused is the error of our copy of Kustomize for a Helm
// chart a kustomization names (helmCharts, HelmChartInflationGenerator).
const kustomizeHelmRefused = "helmCharts are not inflated"

// kustomizeError turns an error of krusty into a RenderError naming the
// kustomization, or the resource file the message is about when it names
// one that exists ("accumulating resources from 'a/b.yaml'", relative to
// the folders named before it). A remote reference names the
// kustomization that holds it (or uses the generator or transformer that
// holds it) and the reference.
func (r *renderer) kustomizeError(dir, kfile string, err error) error {
	msg := err.Error()
	if m := kustomizeRemoteRE.FindStringSubmatch(msg); m != nil {
		where := kfile
		if folder, err := strconv.Unquote(m[2]); err == nil {
			if k := kustomizationFile(r.fsys, CleanDir(folder)); k != "" {
				where = k
			}
		}
		return &RenderError{Path: where, Err: fmt.Errorf("%s is remote; remote bases and resources are disabled, keep everything in this repository", m[1])}
	}
	if strings.Contains(msg, kustomizeHelmRefused) {
		return &RenderError{Path: kfile, Err: errors.New("helmCharts are not rendered inside a kustomization; point a Guard's path at the chart and use spec.helm")}
	}
	re := &RenderError{Path: kfile, Err: fmt.Errorf("kustomize build %s: %s", dir, msg)}
	if m := kustomizeYAMLLineRE.FindStringSubmatch(msg); m != nil {
		re.Line, _ = strconv.Atoi(m[1])
	}
	cur := dir
	for _, m := range kustomizeAccumulateRE.FindAllStringSubmatch(msg, -1) {
		p := repoPath(cur, m[1])
		info, statErr := fs.Stat(r.fsys, p)
		if statErr != nil || strings.HasPrefix(path.Join(cur, m[1]), "..") {
			break
		}
		if info.IsDir() {
			cur = p
			continue
		}
		re.Path = p
		break
	}
	return re
}

// docAt is a document of a file: its line, kind and name.
type docAt struct {
	line       int
	kind, name string
}

// lineOf finds the line in file p where the document of the object with
// this kind and name starts: the document with that kind whose name is
// name or part of it (Kustomize adds prefixes, suffixes and hashes), or
// the only document of the file; 0 when it cannot tell.
func (r *renderer) lineOf(p, kind, name string) int {
	if r.fileDocs == nil {
		r.fileDocs = map[string][]docAt{}
	}
	docs, ok := r.fileDocs[p]
	if !ok {
		if data, ok := r.kfs.linesSource(p); ok {
			decoded, _ := r.decode(p, data)
			for _, d := range decoded {
				m, _ := d.value.(map[string]any)
				md, _ := m["metadata"].(map[string]any)
				k, _ := m["kind"].(string)
				n, _ := md["name"].(string)
				docs = append(docs, docAt{line: d.line, kind: k, name: n})
			}
		}
		r.fileDocs[p] = docs
	}
	if len(docs) == 1 {
		return docs[0].line
	}
	best := 0
	for _, d := range docs {
		if d.kind != kind || d.name == "" {
			continue
		}
		if d.name == name {
			return d.line
		}
		if best == 0 && strings.Contains(name, d.name) {
			best = d.line
		}
	}
	return best
}

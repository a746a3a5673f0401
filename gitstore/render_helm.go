package gitstore

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"regexp"
	"strconv"
	"strings"

	"helm.sh/helm/v4/pkg/chart/common"
	chartcommonutil "helm.sh/helm/v4/pkg/chart/common/util"
	"helm.sh/helm/v4/pkg/chart/loader/archive"
	chart "helm.sh/helm/v4/pkg/chart/v2"
	"helm.sh/helm/v4/pkg/chart/v2/loader"
	chartutil "helm.sh/helm/v4/pkg/chart/v2/util"
	"helm.sh/helm/v4/pkg/engine"
	"helm.sh/helm/v4/pkg/ignore"
	release "helm.sh/helm/v4/pkg/release/v1"
	releaseutil "helm.sh/helm/v4/pkg/release/v1/util"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/kustomize/kyaml/openapi"
	kyaml "sigs.k8s.io/kustomize/kyaml/yaml"
)

const chartFile = "Chart.yaml"

// isChart reports whether dir holds a Helm chart.
func isChart(fsys fs.FS, dir string) bool {
	info, err := fs.Stat(fsys, path.Join(dir, chartFile))
	return err == nil && info.Mode().IsRegular()
}

// helm renders the chart in dir as `helm template --include-crds` does:
// offline, with helm's default capabilities, release name and namespace
// from the options, values.yaml < valuesFiles < values, the same steps as
// helm's install action in client-only dry-run (dependencies enabled by
// condition and tags, values schema, kubeVersion check, templates, NOTES
// left out, manifests sorted in install order). Hooks are rendered as plain
// objects, except test hooks. Objects that name no namespace and are not
// known to be cluster-scoped get the release namespace, where helm install
// would put them.
func (r *renderer) helm(dir string) []*Object {
	chartYAML := path.Join(dir, chartFile)
	chrt, err := r.loadChart(dir)
	if err != nil {
		r.fail(err)
		return nil
	}
	vals, err := r.helmValues(dir)
	if err != nil {
		r.fail(err)
		return nil
	}
	if t := chrt.Metadata.Type; t != "" && t != "application" {
		r.fail(&RenderError{Path: chartYAML, Err: fmt.Errorf("%s charts are not installable", t)})
		return nil
	}
	if missing := missingDependencies(chrt); len(missing) > 0 {
		r.fail(&RenderError{Path: chartYAML, Err: fmt.Errorf("dependencies %s are not in charts/; vendor them (helm dependency build) and commit them: the guard downloads nothing", strings.Join(missing, ", "))})
		return nil
	}
	name, ns := r.opts.Helm.releaseName(), r.opts.Helm.namespace()
	if err := chartutil.ValidateReleaseName(name); err != nil {
		r.fail(&RenderError{Path: chartYAML, Err: fmt.Errorf("release name %q: %w", name, err)})
		return nil
	}
	if err := chartutil.ProcessDependencies(chrt, vals); err != nil {
		r.fail(&RenderError{Path: chartYAML, Err: fmt.Errorf("chart dependencies: %w", err)})
		return nil
	}
	caps := common.DefaultCapabilities.Copy()
	if kv := chrt.Metadata.KubeVersion; kv != "" && !chartutil.IsCompatibleRange(kv, caps.KubeVersion.String()) {
		r.fail(&RenderError{Path: chartYAML, Err: fmt.Errorf("chart requires kubeVersion %s, which is incompatible with Kubernetes %s", kv, caps.KubeVersion.Version)})
		return nil
	}
	values, err := chartcommonutil.ToRenderValuesWithSchemaValidation(chrt, vals,
		common.ReleaseOptions{Name: name, Namespace: ns, Revision: 1, IsInstall: true}, caps, false)
	if err != nil {
		r.fail(&RenderError{Path: chartYAML, Err: fmt.Errorf("values: %w", err)})
		return nil
	}
	var e engine.Engine
	files, err := e.RenderWithContext(context.Background(), chrt, values)
	if err != nil {
		r.fail(helmError(dir, err))
		return nil
	}
	for f := range files {
		if strings.HasSuffix(f, "/NOTES.txt") {
			delete(files, f)
		}
	}
	hooks, manifests, err := releaseutil.SortManifests(files, nil, releaseutil.InstallOrder)
	if err != nil {
		r.fail(helmError(dir, err))
		return nil
	}

	var objs []*Object
	for _, crd := range chrt.CRDObjects() {
		objs = append(objs, r.helmCRDs(dir, crd.Filename, crd.File.Data)...)
	}
	for _, m := range manifests {
		objs = append(objs, r.helmDocument(dir, m.Name, m.Content)...)
	}
	for _, h := range hooks {
		if !isTestHook(h) {
			objs = append(objs, r.helmDocument(dir, h.Path, h.Manifest)...)
		}
	}
	r.defaultNamespace(objs, ns)
	return objs
}

func isTestHook(h *release.Hook) bool {
	for _, e := range h.Events {
		if e == release.HookTest {
			return true
		}
	}
	return false
}

// missingDependencies lists the dependencies of Chart.yaml that charts/
// does not hold, as helm template checks before rendering.
func missingDependencies(chrt *chart.Chart) []string {
	have := map[string]bool{}
	for _, d := range chrt.Dependencies() {
		have[d.Name()] = true
	}
	var missing []string
	for _, d := range chrt.Metadata.Dependencies {
		if !have[d.Name] {
			missing = append(missing, d.Name)
		}
	}
	return missing
}

// loadChart loads the chart in dir, and its subcharts in charts/ (folders
// or .tgz archives), minding .helmignore, as helm's directory loader does.
func (r *renderer) loadChart(dir string) (*chart.Chart, error) {
	rules := ignore.Empty()
	if data, err := fs.ReadFile(r.fsys, path.Join(dir, ignore.HelmIgnore)); err == nil {
		if rules, err = ignore.Parse(bytes.NewReader(data)); err != nil {
			return nil, &RenderError{Path: path.Join(dir, ignore.HelmIgnore), Err: err}
		}
	}
	rules.AddDefaults()

	var files []*archive.BufferedFile
	var total int64
	err := fs.WalkDir(r.fsys, dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return &RenderError{Path: p, Err: unwrapPathError(err)}
		}
		if p == dir {
			return nil
		}
		rel := strings.TrimPrefix(p, dir+"/")
		if dir == "." {
			rel = p
		}
		info, err := d.Info()
		if err != nil {
			return &RenderError{Path: p, Err: err}
		}
		if rules.Ignore(rel, info) {
			if d.IsDir() {
				return fs.SkipDir
			}
			return nil
		}
		if d.IsDir() || !d.Type().IsRegular() {
			return nil
		}
		var data []byte
		if rel == "values.yaml" {
			data, err = r.readFile(p)
		} else {
			data, err = fs.ReadFile(r.fsys, p)
		}
		if err != nil {
			return err
		}
		total += int64(len(data))
		if total > archive.MaxDecompressedChartSize {
			return &RenderError{Path: dir, Err: fmt.Errorf("chart is larger than %d bytes", archive.MaxDecompressedChartSize)}
		}
		files = append(files, &archive.BufferedFile{Name: rel, Data: data})
		return nil
	})
	if err != nil {
		var re *RenderError
		if errors.As(err, &re) {
			return nil, err
		}
		return nil, &RenderError{Path: dir, Err: err}
	}
	chrt, err := loader.LoadFiles(files)
	if err != nil {
		re := &RenderError{Path: path.Join(dir, chartFile), Err: fmt.Errorf("load chart: %w", err)}
		// "cannot load values.yaml: ... yaml: line 3: ..."
		if m := helmLoadRE.FindStringSubmatch(err.Error()); m != nil {
			re.Path = repoPath(dir, m[1])
			var le *lineError
			if errors.As(yamlLineOf(err), &le) {
				re.Line = le.line
			}
		}
		return nil, re
	}
	return chrt, nil
}

// helmValues merges the values files and the inline values, in order; the
// chart's values.yaml is merged under them by helm.
func (r *renderer) helmValues(dir string) (map[string]any, error) {
	vals := map[string]any{}
	for _, f := range r.opts.Helm.ValuesFiles {
		p := cleanDir(path.Join(dir, f))
		if strings.HasPrefix(path.Join(dir, f), "..") {
			return nil, &RenderError{Path: f, Err: errors.New("values file is outside the repository")}
		}
		data, err := r.readFile(p)
		if err != nil {
			return nil, err
		}
		cur, err := loader.LoadValues(bytes.NewReader(data))
		if err != nil {
			return nil, fileError(p, yamlLineOf(err))
		}
		vals = loader.MergeMaps(vals, cur)
	}
	if len(r.opts.Helm.Values) > 0 && string(r.opts.Helm.Values) != "null" {
		var inline map[string]any
		if err := json.Unmarshal(r.opts.Helm.Values, &inline); err != nil {
			return nil, &RenderError{Path: dir, Err: fmt.Errorf("helm values: %w", err)}
		}
		vals = loader.MergeMaps(vals, inline)
	}
	return vals, nil
}

var (
	yamlErrLineRE = regexp.MustCompile(`line (\d+): `)
	helmLoadRE    = regexp.MustCompile(`^cannot load ([\w./-]+): `)
)

// yamlLineOf turns a YAML error that names a line into a lineError.
func yamlLineOf(err error) error {
	if m := yamlErrLineRE.FindStringSubmatchIndex(err.Error()); m != nil {
		line, _ := strconv.Atoi(err.Error()[m[2]:m[3]])
		return &lineError{line: line, err: err}
	}
	return err
}

// helmTemplateRE finds a template and line in helm's errors:
// "parse error at (chart/templates/x.yaml:3): ...",
// "execution error at (chart/templates/x.yaml:3:4): ...",
// "chart/templates/x.yaml:5:14\n  executing ...", or
// "YAML parse error on chart/templates/x.yaml: ...".
var helmTemplateRE = regexp.MustCompile(`([\w.-]+(?:/charts/[\w.-]+)*/(?:templates|crds)/[^\s:()]+)(?::(\d+))?`)

// helmError turns helm's error into a RenderError naming the template and
// line in the repository when the message names them.
func helmError(dir string, err error) error {
	msg := err.Error()
	re := &RenderError{Path: path.Join(dir, chartFile), Err: fmt.Errorf("helm template: %s", msg)}
	if m := helmTemplateRE.FindStringSubmatch(msg); m != nil {
		re.Path = chartPath(dir, m[1])
		// "YAML parse error on" counts lines of the output, not of the template.
		if m[2] != "" && !strings.Contains(msg, "YAML parse error") {
			re.Line, _ = strconv.Atoi(m[2])
		}
	}
	return re
}

// chartPath maps helm's name of a chart file ("mychart/templates/x.yaml",
// "mychart/charts/sub/templates/y.yaml") to its repository path.
func chartPath(dir, name string) string {
	_, rest, ok := strings.Cut(name, "/")
	if !ok {
		return cleanDir(dir)
	}
	return repoPath(dir, rest)
}

// helmDocument decodes one rendered document of template name. Its
// objects name the template; the line is unknown, since one template line
// can make many output lines.
func (r *renderer) helmDocument(dir, name, content string) []*Object {
	where := chartPath(dir, name)
	docs, err := decodeYAML([]byte(content))
	if err != nil {
		r.fail(&RenderError{Path: where, Err: fmt.Errorf("rendered template does not parse: %w", err)})
		return nil
	}
	var objs []*Object
	for _, doc := range docs {
		got, err := documentObjects(doc.value, 0, nil)
		if err != nil {
			var le *lineError
			if errors.As(err, &le) {
				err = le.err
			}
			r.fail(&RenderError{Path: where, Err: fmt.Errorf("rendered template: %w", err)})
			continue
		}
		for _, o := range got {
			o.Source = Source{URL: r.src.URL, Revision: r.src.Revision, Path: where}
		}
		objs = append(objs, got...)
	}
	return objs
}

// helmCRDs decodes a file of crds/, which helm does not template: its
// objects keep their lines.
func (r *renderer) helmCRDs(dir, name string, data []byte) []*Object {
	where := chartPath(dir, name)
	docs, err := decodeYAML(data)
	if err != nil {
		r.fail(fileError(where, err))
		return nil
	}
	var objs []*Object
	for _, doc := range docs {
		got, err := documentObjects(doc.value, doc.line, doc.itemLines)
		if err != nil {
			r.fail(fileError(where, err))
			continue
		}
		for _, o := range got {
			o.Source = Source{URL: r.src.URL, Revision: r.src.Revision, Path: where, Line: o.Source.Line}
		}
		objs = append(objs, got...)
	}
	return objs
}

// defaultNamespace puts objects that name no namespace into ns, unless
// their kind is cluster-scoped: a built-in kind Kubernetes declares so, or
// a kind a CustomResourceDefinition among objs declares with scope Cluster.
// A custom kind whose definition is elsewhere counts as namespaced, as
// Kustomize's namespace transformer counts it.
func (r *renderer) defaultNamespace(objs []*Object, ns string) {
	clusterKinds := map[string]bool{} // "group/Kind"
	for _, o := range objs {
		if o.Key.Group != "apiextensions.k8s.io" || o.Key.Kind != "CustomResourceDefinition" {
			continue
		}
		scope, _, _ := unstructured.NestedString(o.Obj().Object, "spec", "scope")
		group, _, _ := unstructured.NestedString(o.Obj().Object, "spec", "group")
		kind, _, _ := unstructured.NestedString(o.Obj().Object, "spec", "names", "kind")
		if scope == "Cluster" {
			clusterKinds[group+"/"+kind] = true
		}
	}
	for _, o := range objs {
		if o.Key.Namespace != "" || clusterKinds[o.Key.Group+"/"+o.Key.Kind] {
			continue
		}
		if openapi.IsCertainlyClusterScoped(kyaml.TypeMeta{APIVersion: o.GVK().GroupVersion().String(), Kind: o.Key.Kind}) {
			continue
		}
		u := o.Obj()
		u.SetNamespace(ns)
		o.SetObj(u)
	}
}

package render

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
//
// The guard reads the chart's files and values files (within the limits,
// decrypted); Helm loads, checks and renders them in a process of its own
// (helm_child.go), bounded in time, memory and output, so that a template
// that loops, recurses or allocates without end costs that process, not
// the guard.
func (r *renderer) helm(dir string) []*Object {
	job, err := r.helmJob(dir)
	if err != nil {
		r.fail(err)
		return nil
	}
	if job.Capabilities == nil && r.opts.Helm.CapabilitiesFrom != nil {
		// The cluster could not be asked: try again, render nothing
		// with capabilities other than the cluster's.
		if job.Capabilities, err = r.opts.Helm.CapabilitiesFrom(); err != nil {
			r.transient = err
			return nil
		}
	}
	res, err := runHelm(job, r.lim)
	var notStarted *helmStartError
	switch {
	case errors.As(err, &notStarted):
		r.transient = err
		return nil
	case err != nil:
		r.fail(&RenderError{Path: path.Join(dir, chartFile), Err: err})
		return nil
	}
	if len(res.Problems) > 0 {
		for _, p := range res.Problems {
			r.fail(p.renderError())
		}
		return nil
	}
	var crds, objs []*Object
	for _, crd := range res.CRDs {
		crds = append(crds, r.helmCRDs(dir, crd.Name, crd.Data)...)
	}
	for _, m := range res.Manifests {
		objs = append(objs, r.helmDocument(dir, m.Name, m.Content)...)
	}
	if len(r.opts.Helm.PostRenderers) > 0 {
		objs = r.postRender(dir, objs)
	}
	objs = append(crds, objs...)
	r.defaultNamespace(objs, job.Namespace)
	return objs
}

// renderChart loads, checks and renders the chart of job: the part of
// helm that runs in the child process. Problems with the chart are in the
// result; they name the chart's file and line where Helm's message does.
func renderChart(job *helmJob) *helmResult {
	res := &helmResult{}
	fail := func(err error) *helmResult {
		res.Problems = append(res.Problems, problemOf(job.Dir, err))
		return res
	}
	dir := job.Dir
	chartYAML := path.Join(dir, chartFile)
	chrt, err := loadChartFiles(dir, job.Files)
	if err != nil {
		return fail(err)
	}
	vals, err := job.values()
	if err != nil {
		return fail(err)
	}
	if t := chrt.Metadata.Type; t != "" && t != "application" {
		return fail(&RenderError{Path: chartYAML, Err: fmt.Errorf("%s charts are not installable", t)})
	}
	if missing := missingDependencies(chrt); len(missing) > 0 {
		return fail(&RenderError{Path: chartYAML, Err: fmt.Errorf("dependencies %s are not in charts/; vendor them (helm dependency build) and commit them: the guard downloads nothing", strings.Join(missing, ", "))})
	}
	name, ns := job.Release, job.Namespace
	if err := chartutil.ValidateReleaseName(name); err != nil {
		return fail(&RenderError{Path: chartYAML, Err: fmt.Errorf("release name %q: %w", name, err)})
	}
	if err := chartutil.ProcessDependencies(chrt, vals); err != nil {
		return fail(&RenderError{Path: chartYAML, Err: fmt.Errorf("chart dependencies: %w", err)})
	}
	caps, err := helmCapabilities(job.Capabilities)
	if err != nil {
		return fail(&RenderError{Path: chartYAML, Err: err})
	}
	if kv := chrt.Metadata.KubeVersion; kv != "" && !chartutil.IsCompatibleRange(kv, caps.KubeVersion.String()) {
		return fail(&RenderError{Path: chartYAML, Err: fmt.Errorf("chart requires kubeVersion %s, which is incompatible with Kubernetes %s", kv, caps.KubeVersion.Version)})
	}
	// Helm's own schema validation loads what a schema refers to, from
	// the network and the disk: validateValuesSchemas loads nothing.
	values, err := chartcommonutil.ToRenderValuesWithSchemaValidation(chrt, vals,
		common.ReleaseOptions{Name: name, Namespace: ns, Revision: 1, IsInstall: true}, caps, true)
	if err != nil {
		return fail(&RenderError{Path: chartYAML, Err: fmt.Errorf("values: %w", err)})
	}
	coalesced, _ := values["Values"].(common.Values)
	if err := validateValuesSchemas(dir, chrt, coalesced); err != nil {
		return fail(err)
	}
	// The zero Engine has no cluster to look up (lookup answers nothing)
	// and no DNS (getHostByName answers "").
	var e engine.Engine
	files, err := e.RenderWithContext(context.Background(), chrt, values)
	if err != nil {
		return fail(helmError(dir, err))
	}
	if withoutNotes(files) > job.MaxOutputBytes {
		return fail(&RenderError{Path: chartYAML, Err: helmOutputError(job.MaxOutputBytes)})
	}
	hooks, manifests, err := releaseutil.SortManifests(files, nil, releaseutil.InstallOrder)
	if err != nil {
		return fail(helmError(dir, err))
	}
	for _, crd := range chrt.CRDObjects() {
		res.CRDs = append(res.CRDs, helmFile{Name: crd.Filename, Data: crd.File.Data})
	}
	for _, m := range manifests {
		res.Manifests = append(res.Manifests, helmManifest{Name: m.Name, Content: m.Content})
	}
	for _, h := range hooks {
		if !isTestHook(h) {
			res.Manifests = append(res.Manifests, helmManifest{Name: h.Path, Content: h.Manifest})
		}
	}
	return res
}

// withoutNotes drops the charts' NOTES.txt from the rendered files and
// returns the size of the rest.
func withoutNotes(files map[string]string) int64 {
	var size int64
	for f, content := range files {
		if strings.HasSuffix(f, "/NOTES.txt") {
			delete(files, f)
			continue
		}
		size += int64(len(content))
	}
	return size
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

// helmJob reads what rendering the chart in dir needs: its files (and
// those of its subcharts in charts/, folders or .tgz archives), minding
// .helmignore as helm's directory loader does, and the values files, each
// within the limits, SOPS-encrypted values decrypted. YAML and JSON files
// that Helm parses (values, Chart.yaml, the schema; not templates) are
// checked against the decoding limits first.
func (r *renderer) helmJob(dir string) (*helmJob, error) {
	job := &helmJob{Dir: dir, Release: r.opts.Helm.releaseName(), Namespace: r.opts.Helm.namespace(),
		Values: r.opts.Helm.Values, Capabilities: r.opts.Helm.Capabilities, MaxOutputBytes: r.lim.HelmMaxOutputBytes}
	var err error
	if job.ValuesFrom, err = r.valuesFromJSON(); err != nil {
		return nil, err
	}
	rules, err := r.helmIgnore(dir)
	if err != nil {
		return nil, err
	}

	var total int64
	err = walkWithin(r.fsys, dir, r.lim.MaxFiles, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return &RenderError{Path: p, Err: UnwrapPathError(err)}
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
			data, err = r.read(p)
		}
		if err != nil {
			return err
		}
		total += int64(len(data))
		if total > archive.MaxDecompressedChartSize {
			return &RenderError{Path: dir, Err: fmt.Errorf("chart is larger than %d bytes", archive.MaxDecompressedChartSize)}
		}
		if parsedByHelm(rel) {
			if err := r.checkDecode(p, data); err != nil {
				return err
			}
		}
		job.Files = append(job.Files, helmFile{Name: rel, Data: data})
		return nil
	})
	if err != nil {
		var re *RenderError
		if errors.As(err, &re) {
			return nil, err
		}
		return nil, &RenderError{Path: dir, Err: err}
	}
	if job.ValuesFiles, err = r.helmValuesFiles(dir); err != nil {
		return nil, err
	}
	return job, nil
}

// helmIgnore reads the chart's .helmignore, with helm's default rules.
func (r *renderer) helmIgnore(dir string) (*ignore.Rules, error) {
	rules := ignore.Empty()
	ignoreFile := path.Join(dir, ignore.HelmIgnore)
	switch data, err := r.read(ignoreFile); {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		return nil, err
	default:
		if rules, err = ignore.Parse(bytes.NewReader(data)); err != nil {
			return nil, &RenderError{Path: ignoreFile, Err: err}
		}
	}
	rules.AddDefaults()
	return rules, nil
}

// helmValuesFiles reads spec.helm.valuesFiles (relative to the chart,
// inside the repository), each checked against the decoding limits.
func (r *renderer) helmValuesFiles(dir string) ([]helmFile, error) {
	var out []helmFile
	for _, f := range r.opts.Helm.ValuesFiles {
		p := CleanDir(path.Join(dir, f))
		if strings.HasPrefix(path.Join(dir, f), "..") {
			return nil, &RenderError{Path: f, Err: errors.New("values file is outside the repository")}
		}
		data, err := r.readFile(p)
		if err != nil {
			return nil, err
		}
		if err := r.checkDecode(p, data); err != nil {
			return nil, err
		}
		out = append(out, helmFile{Name: p, Data: data})
	}
	return out, nil
}

// parsedByHelm reports whether Helm parses the chart file rel (relative
// to the chart) as YAML or JSON when it loads the chart: everything but
// templates and CRDs (which the guard decodes itself, within the limits).
func parsedByHelm(rel string) bool {
	if manifestFormat(rel) == "" {
		return false
	}
	for _, part := range strings.Split(path.Dir(rel), "/") {
		if part == "templates" || part == "crds" {
			return false
		}
	}
	return true
}

// loadChartFiles loads the chart in dir from its files; a file that does
// not parse is named, with its line.
func loadChartFiles(dir string, files []helmFile) (*chart.Chart, error) {
	buffered := make([]*archive.BufferedFile, len(files))
	for i, f := range files {
		buffered[i] = &archive.BufferedFile{Name: f.Name, Data: f.Data}
	}
	chrt, err := loader.LoadFiles(buffered)
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

// values merges the values files, the values from the cluster
// (valuesFrom) and the inline values, in order; the chart's values.yaml is
// merged under them by helm.
func (job *helmJob) values() (map[string]any, error) {
	vals := map[string]any{}
	for _, f := range job.ValuesFiles {
		cur, err := loader.LoadValues(bytes.NewReader(f.Data))
		if err != nil {
			return nil, fileError(f.Name, yamlLineOf(err))
		}
		vals = loader.MergeMaps(vals, cur)
	}
	for i, raw := range job.ValuesFrom {
		var cur map[string]any
		if err := json.Unmarshal(raw, &cur); err != nil {
			return nil, &RenderError{Path: job.Dir, Err: fmt.Errorf("helm valuesFrom[%d]: %w", i, err)}
		}
		vals = loader.MergeMaps(vals, cur)
	}
	if len(job.Values) > 0 && string(job.Values) != "null" {
		var inline map[string]any
		if err := json.Unmarshal(job.Values, &inline); err != nil {
			return nil, &RenderError{Path: job.Dir, Err: fmt.Errorf("helm values: %w", err)}
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
		return CleanDir(dir)
	}
	return repoPath(dir, rest)
}

// helmDocument decodes one rendered document of template name. Its
// objects name the template; the line is unknown, since one template line
// can make many output lines.
func (r *renderer) helmDocument(dir, name, content string) []*Object {
	where := chartPath(dir, name)
	docs, err := decodeYAML([]byte(content), r.lim)
	if err != nil {
		r.fail(&RenderError{Path: where, Err: fmt.Errorf("rendered template does not parse: %w", err)})
		return nil
	}
	for i := range docs {
		docs[i].line, docs[i].itemLines = 0, nil
	}
	return r.documentsObjects(where, docs, func(err error) error {
		var le *lineError
		if errors.As(err, &le) {
			err = le.err
		}
		return &RenderError{Path: where, Err: fmt.Errorf("rendered template: %w", err)}
	})
}

// helmCRDs decodes a file of crds/, which helm does not template: its
// objects keep their lines.
func (r *renderer) helmCRDs(dir, name string, data []byte) []*Object {
	where := chartPath(dir, name)
	docs, err := decodeYAML(data, r.lim)
	if err != nil {
		r.fail(fileError(where, err))
		return nil
	}
	return r.documentsObjects(where, docs, func(err error) error { return fileError(where, err) })
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

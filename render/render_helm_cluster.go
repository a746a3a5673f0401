package render

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"slices"
	"strings"

	"helm.sh/helm/v4/pkg/chart/common"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/api/types"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	"sigs.k8s.io/yaml"

	"github.com/driftguard/driftguard/api/v1alpha1"
)

// What a chart's render takes from the cluster rather than from Git: values
// of ConfigMaps and Secrets (spec.helm.valuesFrom), the cluster's
// capabilities (.Capabilities), and the patches applied over the chart's
// output (spec.helm.postRenderers). The reconciler reads them; the render
// only uses what it is given, so that it stays a function of its options
// (RenderOptions.Hash covers all three).

// HelmValues are values read from a ConfigMap or Secret for a chart.
type HelmValues struct {
	// From names where the values come from, for errors: the Guard's field,
	// the object and the key ("spec.helm.valuesFrom[1] (Secret
	// driftguard-system/db, key values.yaml)"). It is not part of Hash.
	From string
	// Data is the value of the key.
	Data []byte
	// TargetPath, when set, puts Data as one string at this dotted path
	// (a dot inside a name written \.); else Data is a YAML document of
	// values.
	TargetPath string
	// Secret marks every value of Data sensitive (see Object.Sensitive).
	Secret bool
}

// Capabilities are what .Capabilities tells a chart about the cluster.
type Capabilities struct {
	// KubeVersion is the API server's version (v1.37.2).
	KubeVersion string `json:"kubeVersion"`
	// APIVersions are the group versions the API server serves ("v1",
	// "apps/v1") and, for each kind, "group/version/Kind", sorted.
	APIVersions []string `json:"apiVersions"`
}

// DefaultKubeVersion is .Capabilities.KubeVersion when a render has no
// cluster to ask (driftguard validate, Capabilities nil): Helm's default.
func DefaultKubeVersion() string { return common.DefaultCapabilities.KubeVersion.Version }

// Digest identifies capabilities ("helm-default" for nil: Helm's).
func (c *Capabilities) Digest() string {
	if c == nil {
		return "helm-default"
	}
	b, _ := json.Marshal(c)
	d := sha256.Sum256(b)
	return hex.EncodeToString(d[:])
}

// RenderAsked is RenderWith that also says which capabilities the render
// asked opts.Helm.CapabilitiesFrom for (a digest; "" when it asked
// nothing: no chart, or fixed capabilities), for a cache to keep with the
// outcome (Rendered.Capabilities).
func RenderAsked(fsys fs.FS, dir string, src Source, opts RenderOptions) (objs []*Object, asked string, err error) {
	if from := opts.Helm.CapabilitiesFrom; from != nil && opts.Helm.Capabilities == nil {
		opts.Helm.CapabilitiesFrom = func() (*Capabilities, error) {
			c, err := from()
			if err == nil {
				asked = c.Digest()
			}
			return c, err
		}
	}
	objs, err = RenderWith(fsys, dir, src, opts)
	return objs, asked, err
}

// helmCapabilities are the capabilities a chart renders with: the
// cluster's when known, Helm's defaults otherwise.
func helmCapabilities(c *Capabilities) (*common.Capabilities, error) {
	caps := common.DefaultCapabilities.Copy()
	if c == nil {
		return caps, nil
	}
	kv, err := common.ParseKubeVersion(c.KubeVersion)
	if err != nil {
		return nil, fmt.Errorf("the cluster's Kubernetes version %q: %w", c.KubeVersion, err)
	}
	caps.KubeVersion = *kv
	caps.APIVersions = common.VersionSet(slices.Clone(c.APIVersions))
	return caps, nil
}

// Patch is a Kustomize patch over a chart's output: a strategic merge
// patch or a JSON 6902 patch, for the objects Target selects.
type Patch struct {
	Patch  string       `json:"patch"`
	Target *PatchTarget `json:"target,omitempty"`
}

// PatchTarget selects the objects a Patch applies to: the Guard's
// spec.helm.postRenderers[].kustomize.patches[].target, whose JSON is
// Kustomize's patch target (group, version, kind, name and namespace are
// regular expressions), so it goes to Kustomize as it is.
type PatchTarget = v1alpha1.PatchTarget

// PostRenderer is one entry of spec.helm.postRenderers: Kustomize patches
// applied together.
type PostRenderer struct {
	Patches []Patch `json:"patches"`
}

// valuesFromJSON reads each entry of ValuesFrom into a JSON object, in
// order, checking the decoding limits; Secret values are marked
// sensitive. Errors name the entry (From) and a line, never a value.
func (r *renderer) valuesFromJSON() ([]json.RawMessage, error) {
	var out []json.RawMessage
	for _, v := range r.opts.Helm.ValuesFrom {
		if err := r.count(v.From, len(v.Data)); err != nil {
			return nil, err
		}
		var vals map[string]any
		if v.TargetPath != "" {
			if v.Secret {
				r.sensitive.Add(string(v.Data))
			}
			keys, err := splitTargetPath(v.TargetPath)
			if err != nil {
				return nil, &RenderError{Path: v.From, Err: err}
			}
			vals = map[string]any{}
			cur := vals
			for _, k := range keys[:len(keys)-1] {
				next := map[string]any{}
				cur[k] = next
				cur = next
			}
			cur[keys[len(keys)-1]] = string(v.Data)
		} else {
			if _, err := decodeYAML(v.Data, r.lim); err != nil {
				var le *LimitError
				if errors.As(err, &le) {
					return nil, &RenderError{Path: v.From, Err: err}
				}
			}
			if err := yaml.Unmarshal(v.Data, &vals); err != nil {
				// The parser's message may quote the text: only its line.
				msg := "values do not parse as a YAML map"
				var le *lineError
				if errors.As(yamlLineOf(err), &le) {
					msg += fmt.Sprintf(" (line %d)", le.line)
				}
				if !v.Secret {
					msg += ": " + err.Error()
				}
				return nil, &RenderError{Path: v.From, Err: errors.New(msg)}
			}
			if v.Secret {
				r.sensitive.AddValue(vals)
			}
		}
		if vals == nil {
			continue
		}
		b, err := json.Marshal(vals)
		if err != nil {
			return nil, &RenderError{Path: v.From, Err: fmt.Errorf("values: %w", err)}
		}
		out = append(out, b)
	}
	return out, nil
}

// splitTargetPath splits a dotted path (a.b.c, a dot inside a name written
// \.) into its names.
func splitTargetPath(p string) ([]string, error) {
	var keys []string
	var cur strings.Builder
	for i := 0; i < len(p); i++ {
		switch c := p[i]; {
		case c == '\\' && i+1 < len(p) && p[i+1] == '.':
			cur.WriteByte('.')
			i++
		case c == '.':
			keys = append(keys, cur.String())
			cur.Reset()
		default:
			cur.WriteByte(c)
		}
	}
	keys = append(keys, cur.String())
	if slices.Contains(keys, "") {
		return nil, fmt.Errorf("targetPath %q has an empty name (a.b.c; a dot inside a name is written \\.)", p)
	}
	return keys, nil
}

// helmTemplateAnnotation carries, through Kustomize, the template an object
// was rendered from, so that its Source still names it.
const helmTemplateAnnotation = "render.driftguard.io/helm-template"

// postRender applies the Kustomize patches of opts.Helm.PostRenderers, in
// order, over the objects rendered from the chart's templates (not its
// crds/, which Helm's post-renderers do not see either), before objects
// without a namespace get the release's. An object keeps the template it
// came from as its Source; one a patch made anew names the Chart.yaml.
func (r *renderer) postRender(dir string, objs []*Object) []*Object {
	chartYAML := path.Join(dir, chartFile)
	for i, pr := range r.opts.Helm.PostRenderers {
		if len(pr.Patches) == 0 || len(objs) == 0 {
			continue
		}
		field := fmt.Sprintf("spec.helm.postRenderers[%d].kustomize", i)
		out, err := kustomizePatch(objs, pr.Patches)
		if err != nil {
			r.fail(&RenderError{Path: chartYAML, Err: fmt.Errorf("%s: %w", field, err)})
			return nil
		}
		var next []*Object
		for _, m := range out {
			where := chartYAML
			if md, _ := m["metadata"].(map[string]any); md != nil {
				if ann, _ := md["annotations"].(map[string]any); ann != nil {
					if t, ok := ann[helmTemplateAnnotation].(string); ok {
						where = t
					}
				}
			}
			dropAnnotation(m, helmTemplateAnnotation)
			if err := validate(m); err != nil {
				r.fail(&RenderError{Path: chartYAML, Err: fmt.Errorf("%s: patched object: %w", field, err)})
				continue
			}
			// Kustomize's numbers are ints; objects hold JSON's (int64).
			b, err := json.Marshal(m)
			u := &unstructured.Unstructured{}
			if err == nil {
				err = u.UnmarshalJSON(b)
			}
			if err != nil {
				r.fail(&RenderError{Path: where, Err: fmt.Errorf("%s: patched object: %w", field, err)})
				continue
			}
			next = append(next, NewObject(u, Source{URL: r.src.URL, Revision: r.src.Revision, Path: where}))
		}
		objs = next
	}
	return objs
}

// kustomizePatch runs Kustomize, in memory, on a kustomization holding
// objs as its one resource file and patches as its patches.
func kustomizePatch(objs []*Object, patches []Patch) (out []map[string]any, err error) {
	var res bytes.Buffer
	for _, o := range objs {
		u := o.Obj().DeepCopy()
		ann := u.GetAnnotations()
		if ann == nil {
			ann = map[string]string{}
		}
		ann[helmTemplateAnnotation] = o.Source.Path
		u.SetAnnotations(ann)
		b, err := yaml.Marshal(u.Object)
		if err != nil {
			return nil, fmt.Errorf("object %s: %w", o.Key, err)
		}
		res.WriteString("---\n")
		res.Write(b)
	}
	k := map[string]any{
		"apiVersion": "kustomize.config.k8s.io/v1beta1",
		"kind":       "Kustomization",
		"resources":  []string{"chart.yaml"},
		"patches":    patches,
	}
	kb, err := yaml.Marshal(k)
	if err != nil {
		return nil, err
	}
	mem := filesys.MakeFsInMemory()
	if err := mem.WriteFile("/post-render/chart.yaml", res.Bytes()); err != nil {
		return nil, err
	}
	if err := mem.WriteFile("/post-render/kustomization.yaml", kb); err != nil {
		return nil, err
	}
	defer func() {
		if v := recover(); v != nil {
			out, err = nil, fmt.Errorf("kustomize failed: %v", v)
		}
	}()
	rm, err := krusty.MakeKustomizer(&krusty.Options{
		Reorder:          krusty.ReorderOptionNone,
		LoadRestrictions: types.LoadRestrictionsRootOnly,
		PluginConfig:     types.DisabledPluginConfig(),
	}).Run(mem, "/post-render")
	if err != nil {
		return nil, errors.New(strings.ReplaceAll(err.Error(), "/post-render/", ""))
	}
	for _, res := range rm.Resources() {
		m, err := res.Map()
		if err != nil {
			return nil, fmt.Errorf("output %s: %w", res.CurId(), err)
		}
		out = append(out, m)
	}
	return out, nil
}

package render

import (
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"
)

// Fuzz targets of what a committer writes: run one with
//
//	go test -run='^$' -fuzz=FuzzDecodeYAML -fuzztime=20s ./render/
//
// Small limits make the fuzzer reach them often: a decoding that succeeds
// must be within them, and nothing may panic.

var fuzzLimits = Limits{MaxDepth: 20, MaxAliasValues: 1000, MaxDecodedBytes: 1 << 16}.over(DefaultLimits())

// measure returns the nesting depth of v and the text of its keys and
// strings, as the decoders count them.
func measure(v any) (depth int, text int64) {
	switch v := v.(type) {
	case map[string]any:
		for k, x := range v {
			d, t := measure(x)
			depth, text = max(depth, d), text+t+int64(len(k))
		}
		return depth + 1, text
	case []any:
		for _, x := range v {
			d, t := measure(x)
			depth, text = max(depth, d), text+t
		}
		return depth + 1, text
	case string:
		return 0, int64(len(v))
	}
	return 0, 0
}

// checkDocuments checks decoded documents against the limits and that
// they are JSON values.
func checkDocuments(t *testing.T, docs []document) {
	var text int64
	for _, d := range docs {
		depth, n := measure(d.value)
		if depth > fuzzLimits.MaxDepth {
			t.Fatalf("a document %d deep decoded, limit %d", depth, fuzzLimits.MaxDepth)
		}
		text += n
		if _, err := json.Marshal(d.value); err != nil {
			t.Fatalf("decoded value is not JSON: %v", err)
		}
	}
	// Scalars other than strings count too, so the strings are at most
	// the limit.
	if text > fuzzLimits.MaxDecodedBytes {
		t.Fatalf("%d bytes of text decoded, limit %d", text, fuzzLimits.MaxDecodedBytes)
	}
}

func FuzzDecodeJSON(f *testing.F) {
	for _, s := range []string{
		jsonFile,
		`{"a": [1, 2.5, -3e400, true, null, "x\u00e9"]}`,
		`{"a": 1} {"b": 2}`,
		`{"a": 1, "a": 2}`,
		`[[[[[[[[[[[[[[[[[[[[[[[[[]]]]]]]]]]]]]]]]]]]]]]]]`,
		`{"items": [{"kind": "A"}, {"kind": "B"}], "kind": "List"}`,
		`{"a": "` + strings.Repeat("x", 1000) + `"}`,
		`{"a": `,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		docs, err := decodeJSON(data, fuzzLimits)
		if err != nil {
			return
		}
		checkDocuments(t, docs)
	})
}

func FuzzDecodeYAML(f *testing.F) {
	for _, s := range []string{
		multiDoc,
		list,
		"a: &a {x: 1}\nb: *a\nc:\n  <<: *a\n  y: 2\n",
		"a: &a [x, x]\nb: &b [*a, *a]\nc: &c [*b, *b]\nd: [*c, *c]\n---\ne: [*c]\n",
		"<<: [*a, *b]\n",
		"a: !!binary aGVsbG8=\nb: 2001-12-14t21:59:43.10-05:00\nc: .inf\nd: 0x1F\n",
		"a:\n  b:\n    c:\n      d: [[[[[[[[[[[[[[[[[[[[[[1]]]]]]]]]]]]]]]]]]]]]]\n",
		"? [a, b]\n: c\n",
		"a: 'unterminated\n",
		"%YAML 1.1\n---\na: b\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		docs, err := decodeYAML(data, fuzzLimits)
		if err != nil {
			return
		}
		checkDocuments(t, docs)
	})
}

// noNetwork is an HTTP transport that fails the test: nothing a render
// does may use the default transport.
type noNetwork struct{ t *testing.T }

func (n noNetwork) RoundTrip(r *http.Request) (*http.Response, error) {
	n.t.Fatalf("the render sent %s %s", r.Method, r.URL)
	return nil, errors.New("no network")
}

// FuzzKustomize builds a kustomization over a resource and a patch, both
// written by the fuzzer, in a small tree with a base: it must not panic,
// reach the network, or return an object without kind and name.
func FuzzKustomize(f *testing.F) {
	f.Add("resources: [cm.yaml, ../base]\npatches: [{path: p.yaml}]\n", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cm}\n", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cm}\ndata: {a: b}\n")
	f.Add("namePrefix: x-\nresources: [cm.yaml]\nconfigMapGenerator: [{name: g, files: [p.yaml]}]\n", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cm}\n", "k: v\n")
	f.Add("resources: [cm.yaml]\nreplacements: [{source: {kind: ConfigMap, name: cm, fieldPath: data.a}, targets: [{select: {kind: ConfigMap}, fieldPaths: [data.b]}]}]\n", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cm}\ndata: {a: x, b: y}\n", "")
	f.Add("resources:\n- https://example.com/x.yaml\n- github.com/org/repo?ref=v1\n", "", "")
	f.Add("generators: [p.yaml]\n", "", "apiVersion: builtin\nkind: ConfigMapGenerator\nmetadata: {name: g}\nfiles: [http://127.0.0.1:1/x]\n")
	f.Add("helmCharts: [{name: x, repo: http://127.0.0.1:1}]\n", "", "")
	f.Add("resources: [cm.yaml]\n", "a: &a [x, x]\nb: &b [*a, *a]\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: cm}\n", "")
	saved := http.DefaultTransport
	f.Cleanup(func() { http.DefaultTransport = saved })
	f.Fuzz(func(t *testing.T, kustomization, resource, patch string) {
		http.DefaultTransport = noNetwork{t}
		fsys := files(
			"k/kustomization.yaml", kustomization,
			"k/cm.yaml", resource,
			"k/p.yaml", patch,
			"base/kustomization.yaml", "resources: [d.yaml]\n",
			"base/d.yaml", "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web}\nspec: {replicas: 1}\n",
		)
		objs, err := RenderWith(fsys, "k", Source{}, RenderOptions{Limits: fuzzLimits})
		if err != nil {
			if msg := err.Error(); strings.Contains(msg, "render failed: ") || strings.Contains(msg, "kustomize failed: ") {
				t.Fatalf("panic: %v", err)
			}
			return
		}
		for _, o := range objs {
			if err := validate(o.Obj().Object); err != nil {
				t.Fatalf("object %s: %v", o.Key, err)
			}
		}
	})
}

// FuzzHelmValues parses a values file and inline values as a chart's
// render does (the limits first, then Helm's loader): it must not panic,
// and values that parse merge into a JSON object.
func FuzzHelmValues(f *testing.F) {
	f.Add([]byte("replicaCount: 3\nimage:\n  tag: prod\n"), []byte(`{"replicaCount": 4}`))
	f.Add([]byte("a: &a {x: 1}\nb: *a\n"), []byte(`null`))
	f.Add([]byte("- a\n- b\n"), []byte(`[1]`))
	f.Add([]byte("a: [[[[[[[[[[[[[[[[[[[[[[[[[]]]]]]]]]]]]]]]]]]]]]]]]\n"), []byte(`{"a": {"b": {"c": 1}}}`))
	f.Add([]byte("a: 1\n---\nb: 2\n"), []byte(``))
	f.Add([]byte("a: !!binary aGVsbG8=\n"), []byte(`{"a": 1e400}`))
	f.Fuzz(func(t *testing.T, file, inline []byte) {
		r := &renderer{lim: fuzzLimits}
		if err := r.checkDecode("c/values-prod.yaml", file); err != nil {
			return
		}
		job := &helmJob{Dir: "c", ValuesFiles: []helmFile{{Name: "c/values-prod.yaml", Data: file}}, Values: inline}
		vals, err := job.values()
		if err != nil {
			var re *RenderError
			if !errors.As(err, &re) {
				t.Fatalf("error %v is not a RenderError", err)
			}
			return
		}
		if _, err := json.Marshal(vals); err != nil {
			t.Fatalf("values are not JSON: %v", err)
		}
	})
}

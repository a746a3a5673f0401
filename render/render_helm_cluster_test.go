// Rendering runs in one goroutine (a chart in a child process), and the
// race detector made these tests ten times slower: make test runs them
// without it (make test-norace), the store's and the rest with it.

//go:build !race

package render

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"testing/fstest"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// clusterChart is a chart that reads the cluster: .Capabilities and values
// a Guard takes from ConfigMaps and Secrets.
func clusterChart() fstest.MapFS {
	return fstest.MapFS{
		"c/Chart.yaml":  {Data: []byte("apiVersion: v2\nname: c\nversion: 0.1.0\n")},
		"c/values.yaml": {Data: []byte("color: red\nsize: s\ndb:\n  user: app\n  password: \"\"\n")},
		"c/templates/cm.yaml": {Data: []byte(`apiVersion: v1
kind: ConfigMap
metadata:
  name: settings
  labels:
    app: c
data:
  color: {{ .Values.color | quote }}
  size: {{ .Values.size | quote }}
  user: {{ .Values.db.user | quote }}
  password: {{ .Values.db.password | quote }}
  kube: {{ .Capabilities.KubeVersion.Version | quote }}
  minor: {{ .Capabilities.KubeVersion.Minor | quote }}
  {{- if .Capabilities.APIVersions.Has "example.com/v1/Widget" }}
  widgets: "yes"
  {{- end }}
`)},
		"c/templates/deploy.yaml": {Data: []byte(`apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
spec:
  replicas: 1
  template:
    spec:
      containers:
      - name: web
        image: web:1
`)},
	}
}

func settingsData(t *testing.T, objs []*Object) map[string]any {
	t.Helper()
	for _, o := range objs {
		if o.Key.Kind == "ConfigMap" && o.Key.Name == "settings" {
			d, _, _ := unstructured.NestedMap(o.Obj().Object, "data")
			return d
		}
	}
	t.Fatalf("no ConfigMap settings among %d objects", len(objs))
	return nil
}

func TestRenderHelmValuesFrom(t *testing.T) {
	for _, tc := range []struct {
		name       string
		from       []HelmValues
		inline     string
		want       map[string]string
		sensitive  []string // values the render must mark secret
		notSecret  []string // values it must not
		wantErr    string
		errMissing string // text the error must not hold
	}{{
		name: "a ConfigMap's whole values.yaml over the chart's",
		from: []HelmValues{{From: "cm", Data: []byte("color: blue\n")}},
		want: map[string]string{"color": "blue", "size": "s"},
	}, {
		name:      "in order: a later entry wins, inline values win over all",
		from:      []HelmValues{{From: "a", Data: []byte("color: blue\nsize: m\n")}, {From: "b", Data: []byte("color: green\n")}},
		inline:    `{"size":"xl"}`,
		want:      map[string]string{"color": "green", "size": "xl"},
		notSecret: []string{"green"},
	}, {
		name:      "a Secret's values are secret, a ConfigMap's are not",
		from:      []HelmValues{{From: "s", Data: []byte("db:\n  password: s3cret-pa55word\n  user: application-user\n"), Secret: true}, {From: "cm", Data: []byte("color: turquoise-blue\n")}},
		want:      map[string]string{"password": "s3cret-pa55word", "user": "application-user", "color": "turquoise-blue"},
		sensitive: []string{"s3cret-pa55word", "application-user"},
		notSecret: []string{"turquoise-blue"},
	}, {
		name:      "targetPath puts one key's value as a string",
		from:      []HelmValues{{From: "s", Data: []byte("12345678901"), TargetPath: "db.password", Secret: true}},
		want:      map[string]string{"password": "12345678901", "user": "app"},
		sensitive: []string{"12345678901"},
	}, {
		name: "targetPath with an escaped dot",
		from: []HelmValues{{From: "cm", Data: []byte("x"), TargetPath: `db.a\.b`}},
		want: map[string]string{"user": "app"},
	}, {
		name:    "an empty name in targetPath",
		from:    []HelmValues{{From: "spec.helm.valuesFrom[0] (ConfigMap ns/x, key k)", Data: []byte("x"), TargetPath: "db..password"}},
		wantErr: "spec.helm.valuesFrom[0] (ConfigMap ns/x, key k): targetPath",
	}, {
		name:       "a Secret that does not parse: the line, never the text",
		from:       []HelmValues{{From: "spec.helm.valuesFrom[0] (Secret ns/db, key values.yaml)", Data: []byte("a: 1\npassword: [hunter2-secret-value\n"), Secret: true}},
		wantErr:    "spec.helm.valuesFrom[0] (Secret ns/db, key values.yaml): values do not parse as a YAML map (line",
		errMissing: "hunter2-secret-value",
	}, {
		name:    "a list is not values",
		from:    []HelmValues{{From: "cm", Data: []byte("- a\n- b\n")}},
		wantErr: "cm: values do not parse as a YAML map",
	}} {
		t.Run(tc.name, func(t *testing.T) {
			opts := RenderOptions{Helm: HelmOptions{ValuesFrom: tc.from}}
			if tc.inline != "" {
				opts.Helm.Values = []byte(tc.inline)
			}
			objs, err := RenderWith(clusterChart(), "c", Source{}, opts)
			if tc.wantErr != "" {
				var re *RenderError
				if err == nil || !errors.As(err, &re) || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want a RenderError holding %q", err, tc.wantErr)
				}
				if tc.errMissing != "" && strings.Contains(err.Error(), tc.errMissing) {
					t.Fatalf("error %q quotes the Secret's text", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			got := settingsData(t, objs)
			for k, v := range tc.want {
				if got[k] != v {
					t.Errorf("data.%s = %v, want %q", k, got[k], v)
				}
			}
			var marked []string
			if s := objs[0].Sensitive(); s != nil {
				marked = s.List()
			}
			for _, v := range tc.sensitive {
				if !slices.Contains(marked, v) {
					t.Errorf("%q is not marked sensitive (marked: %d values)", v, len(marked))
				}
			}
			for _, v := range tc.notSecret {
				if slices.Contains(marked, v) {
					t.Errorf("%q from a ConfigMap is marked sensitive", v)
				}
			}
		})
	}
}

func TestRenderHelmCapabilities(t *testing.T) {
	for _, tc := range []struct {
		name                 string
		caps                 *Capabilities
		kube, minor, widgets string
		wantErr              string
	}{{
		name: "no cluster: Helm's defaults", kube: DefaultKubeVersion(),
	}, {
		name: "the cluster's version and API versions",
		caps: &Capabilities{KubeVersion: "v1.37.2", APIVersions: []string{"v1", "apps/v1", "example.com/v1", "example.com/v1/Widget"}},
		kube: "v1.37.2", minor: "37", widgets: "yes",
	}, {
		name: "a cluster without the kind",
		caps: &Capabilities{KubeVersion: "v1.31.0-gke.100", APIVersions: []string{"v1", "apps/v1"}},
		kube: "v1.31.0-gke.100", minor: "31",
	}, {
		name: "a version that does not parse", caps: &Capabilities{KubeVersion: "banana"}, wantErr: `Kubernetes version "banana"`,
	}} {
		t.Run(tc.name, func(t *testing.T) {
			objs, err := RenderWith(clusterChart(), "c", Source{}, RenderOptions{Helm: HelmOptions{Capabilities: tc.caps}})
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			d := settingsData(t, objs)
			if d["kube"] != tc.kube || (tc.minor != "" && d["minor"] != tc.minor) {
				t.Errorf("kube %v minor %v, want %s %s", d["kube"], d["minor"], tc.kube, tc.minor)
			}
			if w, _ := d["widgets"].(string); w != tc.widgets {
				t.Errorf("widgets %q, want %q", w, tc.widgets)
			}
		})
	}
}

func TestRenderHelmKubeVersionConstraintUsesCluster(t *testing.T) {
	fsys := clusterChart()
	fsys["c/Chart.yaml"] = &fstest.MapFile{Data: []byte("apiVersion: v2\nname: c\nversion: 0.1.0\nkubeVersion: \">=1.36.0-0\"\n")}
	if _, err := RenderWith(fsys, "c", Source{}, RenderOptions{Helm: HelmOptions{Capabilities: &Capabilities{KubeVersion: "v1.37.2", APIVersions: []string{"v1"}}}}); err != nil {
		t.Fatalf("a 1.37 cluster: %v", err)
	}
	_, err := RenderWith(fsys, "c", Source{}, RenderOptions{Helm: HelmOptions{Capabilities: &Capabilities{KubeVersion: "v1.30.1", APIVersions: []string{"v1"}}}})
	if err == nil || !strings.Contains(err.Error(), "incompatible with Kubernetes v1.30.1") {
		t.Fatalf("a 1.30 cluster: %v, want the kubeVersion refused", err)
	}
}

func TestRenderHelmPostRenderers(t *testing.T) {
	smp := Patch{Patch: "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\nspec:\n  replicas: 4\n"}
	json6902 := Patch{Patch: `[{"op":"add","path":"/metadata/labels/patched","value":"json6902"}]`, Target: &PatchTarget{Kind: "ConfigMap", LabelSelector: "app=c"}}
	labelAll := Patch{Patch: "apiVersion: v1\nkind: any\nmetadata:\n  name: any\n  labels:\n    team: shop\n", Target: &PatchTarget{Name: ".*"}}
	for _, tc := range []struct {
		name     string
		prs      []PostRenderer
		replicas int64
		labels   map[string]string // of the ConfigMap
		deployNS string
		wantErr  string
	}{{
		name: "no post-renderer", replicas: 1, labels: map[string]string{"app": "c"}, deployNS: "apps",
	}, {
		name: "strategic merge without a target, JSON 6902 with one", prs: []PostRenderer{{Patches: []Patch{smp, json6902}}},
		replicas: 4, labels: map[string]string{"app": "c", "patched": "json6902"}, deployNS: "apps",
	}, {
		name: "in order, a target matching every object", prs: []PostRenderer{{Patches: []Patch{json6902}}, {Patches: []Patch{labelAll}}},
		replicas: 1, labels: map[string]string{"app": "c", "patched": "json6902", "team": "shop"}, deployNS: "apps",
	}, {
		name: "a JSON 6902 patch without a target", prs: []PostRenderer{{Patches: []Patch{{Patch: `[{"op":"remove","path":"/spec"}]`}}}},
		wantErr: "spec.helm.postRenderers[0].kustomize",
	}, {
		name: "a patch of an object the chart does not render", prs: []PostRenderer{{}, {Patches: []Patch{{Patch: "apiVersion: v1\nkind: Secret\nmetadata:\n  name: nope\n"}}}},
		wantErr: "spec.helm.postRenderers[1].kustomize",
	}} {
		t.Run(tc.name, func(t *testing.T) {
			objs, err := RenderWith(clusterChart(), "c", Source{URL: "u", Revision: "r"}, RenderOptions{Helm: HelmOptions{Namespace: "apps", PostRenderers: tc.prs}})
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(objs) != 2 {
				t.Fatalf("%d objects, want 2", len(objs))
			}
			for _, o := range objs {
				u := o.Obj()
				if ann := u.GetAnnotations(); ann[helmTemplateAnnotation] != "" {
					t.Errorf("%s keeps the annotation %s", o.Key, helmTemplateAnnotation)
				}
				switch o.Key.Kind {
				case "Deployment":
					if r, _, _ := unstructured.NestedInt64(u.Object, "spec", "replicas"); r != tc.replicas {
						t.Errorf("replicas %d, want %d", r, tc.replicas)
					}
					if o.Key.Namespace != tc.deployNS || o.Source.Path != "c/templates/deploy.yaml" || o.Source.Revision != "r" {
						t.Errorf("deployment %s from %+v: want namespace %s, its template as source", o.Key, o.Source, tc.deployNS)
					}
				case "ConfigMap":
					got := u.GetLabels()
					if len(got) != len(tc.labels) {
						t.Errorf("labels %v, want %v", got, tc.labels)
					}
					for k, v := range tc.labels {
						if got[k] != v {
							t.Errorf("labels %v, want %v", got, tc.labels)
						}
					}
					if o.Source.Path != "c/templates/cm.yaml" {
						t.Errorf("configmap source %+v", o.Source)
					}
				}
			}
		})
	}
}

func TestRenderOptionsHashClusterSettings(t *testing.T) {
	base := RenderOptions{Helm: HelmOptions{
		ValuesFrom:    []HelmValues{{From: "a", Data: []byte("x: 1")}},
		Capabilities:  &Capabilities{KubeVersion: "v1.37.2", APIVersions: []string{"v1"}},
		PostRenderers: []PostRenderer{{Patches: []Patch{{Patch: "p"}}}},
	}}
	same := base
	same.Helm.ValuesFrom = []HelmValues{{From: "another name of the same", Data: []byte("x: 1")}}
	if base.Hash() != same.Hash() {
		t.Error("the same values from a differently named object hash differently")
	}
	change := func(f func(h *HelmOptions)) RenderOptions {
		o := base
		f(&o.Helm)
		return o
	}
	for name, o := range map[string]RenderOptions{
		"values changed": change(func(h *HelmOptions) { h.ValuesFrom = []HelmValues{{Data: []byte("x: 2")}} }),
		"values secret":  change(func(h *HelmOptions) { h.ValuesFrom = []HelmValues{{Data: []byte("x: 1"), Secret: true}} }),
		"target path":    change(func(h *HelmOptions) { h.ValuesFrom = []HelmValues{{Data: []byte("x: 1"), TargetPath: "a"}} }),
		"no values from": change(func(h *HelmOptions) { h.ValuesFrom = nil }),
		"kube version": change(func(h *HelmOptions) {
			h.Capabilities = &Capabilities{KubeVersion: "v1.36.0", APIVersions: []string{"v1"}}
		}),
		"api versions": change(func(h *HelmOptions) {
			h.Capabilities = &Capabilities{KubeVersion: "v1.37.2", APIVersions: []string{"v1", "x/v1"}}
		}),
		"no capabilities":  change(func(h *HelmOptions) { h.Capabilities = nil }),
		"other patch":      change(func(h *HelmOptions) { h.PostRenderers = []PostRenderer{{Patches: []Patch{{Patch: "q"}}}} }),
		"no post-renderer": change(func(h *HelmOptions) { h.PostRenderers = nil }),
	} {
		if o.Hash() == base.Hash() {
			t.Errorf("%s: same hash as the base options", name)
		}
	}
	if s := (RenderOptions{Helm: HelmOptions{ValuesFrom: []HelmValues{{Data: []byte("password: hunter2-hunter2"), Secret: true}}}}).String(); strings.Contains(s, "hunter2") {
		t.Errorf("String %q prints a value", s)
	}
}

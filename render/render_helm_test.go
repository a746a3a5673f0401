// Rendering runs in one goroutine (a chart in a child process), and the
// race detector made these tests ten times slower: make test runs them
// without it (make test-norace), the store's and the rest with it.

//go:build !race

package render

import (
	"encoding/json"
	"errors"
	"sort"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/driftguard/driftguard/render/sopstest"
)

// chartFiles is a chart as `helm create` and the field write them: helpers,
// a Deployment and a Service, NOTES.txt, a pre-install hook and a test
// hook, a CRD and an object of it, a subchart folder with its own values.
func chartFiles(kv ...string) fstest.MapFS {
	m := map[string]string{
		"charts/web/Chart.yaml": `apiVersion: v2
name: web
version: 1.2.3
appVersion: "2.0"
dependencies:
- name: cache
  version: 0.1.0
  condition: cache.enabled
`,
		"charts/web/.helmignore": "*.md\nsecret-notes/\n",
		"charts/web/README.md":   "{{ this is not a template and is ignored }}\n",
		"charts/web/values.yaml": `replicaCount: 1
image:
  repository: registry.example/web
  tag: ""
service:
  port: 80
cache:
  enabled: true
`,
		"charts/web/values-prod.yaml": "replicaCount: 3\nimage:\n  tag: prod\n",
		"charts/web/values-eu.yaml":   "service:\n  port: 8080\n",
		"charts/web/templates/_helpers.tpl": `{{- define "web.fullname" -}}
{{ .Release.Name }}-{{ .Chart.Name }}
{{- end }}
`,
		"charts/web/templates/deployment.yaml": `apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ include "web.fullname" . }}
  labels:
    release: {{ .Release.Name }}
    ns: {{ .Release.Namespace }}
spec:
  replicas: {{ .Values.replicaCount }}
  template:
    spec:
      containers:
      - name: web
        image: "{{ .Values.image.repository }}:{{ .Values.image.tag | default .Chart.AppVersion }}"
`,
		"charts/web/templates/service.yaml": `apiVersion: v1
kind: Service
metadata:
  name: {{ include "web.fullname" . }}
spec:
  ports:
  - port: {{ .Values.service.port }}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata:
  name: {{ include "web.fullname" . }}-reader
rules: []
`,
		"charts/web/templates/NOTES.txt": "Visit {{ .Release.Name }}\n",
		"charts/web/templates/hooks.yaml": `apiVersion: batch/v1
kind: Job
metadata:
  name: {{ .Release.Name }}-migrate
  annotations:
    helm.sh/hook: pre-install,pre-upgrade
spec:
  template:
    spec:
      restartPolicy: Never
      containers:
      - name: migrate
        image: registry.example/migrate
---
apiVersion: v1
kind: Pod
metadata:
  name: {{ .Release.Name }}-test
  annotations:
    helm.sh/hook: test
spec:
  containers:
  - name: test
    image: busybox
`,
		"charts/web/templates/widget.yaml": `apiVersion: example.com/v1
kind: Widget
metadata:
  name: {{ .Release.Name }}-widget
`,
		"charts/web/crds/widgets.yaml": `# the Widget definition
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: widgets.example.com
spec:
  group: example.com
  scope: Cluster
  names: {kind: Widget, plural: widgets}
  versions: [{name: v1, served: true, storage: true, schema: {openAPIV3Schema: {type: object}}}]
`,
		"charts/web/charts/cache/Chart.yaml":  "apiVersion: v2\nname: cache\nversion: 0.1.0\n",
		"charts/web/charts/cache/values.yaml": "size: 64\n",
		"charts/web/charts/cache/templates/cm.yaml": `apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ .Release.Name }}-cache
data:
  size: {{ .Values.size | quote }}
`,
	}
	for i := 0; i+1 < len(kv); i += 2 {
		if kv[i+1] == "" {
			delete(m, kv[i])
			continue
		}
		m[kv[i]] = kv[i+1]
	}
	fsys := fstest.MapFS{}
	for p, c := range m {
		fsys[p] = &fstest.MapFile{Data: []byte(c)}
	}
	return fsys
}

func TestRenderHelm(t *testing.T) {
	values := func(s string) json.RawMessage { return json.RawMessage(s) }
	tests := []struct {
		name string
		fsys fstest.MapFS
		helm HelmOptions
		want []placed
		// field checks on objects by key
		check map[string]map[string]any
	}{
		{"defaults", chartFiles(), HelmOptions{}, []placed{
			{"apiextensions.k8s.io/CustomResourceDefinition//widgets.example.com", "charts/web/crds/widgets.yaml", 2},
			{"rbac.authorization.k8s.io/ClusterRole//release-web-reader", "charts/web/templates/service.yaml", 0},
			{"/ConfigMap/default/release-cache", "charts/web/charts/cache/templates/cm.yaml", 0},
			{"/Service/default/release-web", "charts/web/templates/service.yaml", 0},
			{"apps/Deployment/default/release-web", "charts/web/templates/deployment.yaml", 0},
			{"example.com/Widget//release-widget", "charts/web/templates/widget.yaml", 0},
			{"batch/Job/default/release-migrate", "charts/web/templates/hooks.yaml", 0},
		}, map[string]map[string]any{
			"apps/Deployment/default/release-web": {"spec.replicas": int64(1), "metadata.labels.release": "release", "metadata.labels.ns": "default"},
			"/Service/default/release-web":        {"spec.ports": []any{map[string]any{"port": int64(80)}}},
			"/ConfigMap/default/release-cache":    {"data.size": "64"},
		}},
		{"release, namespace, values files in order, inline values last", chartFiles(), HelmOptions{
			ReleaseName: "shop", Namespace: "prod",
			ValuesFiles: []string{"values-prod.yaml", "values-eu.yaml"},
			Values:      values(`{"image": {"repository": "mirror.example/web"}, "cache": {"enabled": false}}`),
		}, []placed{
			{"apiextensions.k8s.io/CustomResourceDefinition//widgets.example.com", "charts/web/crds/widgets.yaml", 2},
			{"rbac.authorization.k8s.io/ClusterRole//shop-web-reader", "charts/web/templates/service.yaml", 0},
			{"/Service/prod/shop-web", "charts/web/templates/service.yaml", 0},
			{"apps/Deployment/prod/shop-web", "charts/web/templates/deployment.yaml", 0},
			{"example.com/Widget//shop-widget", "charts/web/templates/widget.yaml", 0},
			{"batch/Job/prod/shop-migrate", "charts/web/templates/hooks.yaml", 0},
		}, map[string]map[string]any{
			"apps/Deployment/prod/shop-web": {
				"spec.replicas":                 int64(3),
				"metadata.labels.ns":            "prod",
				"spec.template.spec.containers": []any{map[string]any{"name": "web", "image": "mirror.example/web:prod"}},
			},
			"/Service/prod/shop-web": {"spec.ports": []any{map[string]any{"port": int64(8080)}}},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			objs, err := RenderWith(tt.fsys, "charts/web", Source{URL: "u", Revision: "r"}, RenderOptions{Helm: tt.helm})
			if err != nil {
				t.Fatal(err)
			}
			got := make([]placed, len(objs))
			byKey := map[string]*Object{}
			for i, o := range objs {
				got[i] = placed{o.Key.String(), o.Source.Path, o.Source.Line}
				byKey[o.Key.String()] = o
				if o.Source.URL != "u" || o.Source.Revision != "r" {
					t.Errorf("%s: source %+v", o.Key, o.Source)
				}
			}
			sortPlaced(got)
			want := append([]placed(nil), tt.want...)
			sortPlaced(want)
			if len(got) != len(want) {
				t.Fatalf("got %v\nwant %v", got, want)
			}
			for i := range want {
				if got[i] != want[i] {
					t.Errorf("object %s %s:%d, want %s %s:%d", got[i].key, got[i].path, got[i].line, want[i].key, want[i].path, want[i].line)
				}
			}
			for key, fields := range tt.check {
				o := byKey[key]
				if o == nil {
					t.Errorf("no object %s", key)
					continue
				}
				for p, want := range fields {
					v, _, _ := nested(o.Obj().Object, strings.Split(p, "."))
					if gotJSON, wantJSON := mustJSON(t, v), mustJSON(t, want); gotJSON != wantJSON {
						t.Errorf("%s %s = %s, want %s", key, p, gotJSON, wantJSON)
					}
				}
			}
		})
	}
}

func sortPlaced(p []placed) { sort.Slice(p, func(i, j int) bool { return p[i].key < p[j].key }) }

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestRenderHelmEncryptedValues(t *testing.T) {
	key := newAgeKey(t)
	enc := encrypt(t, "replicaCount: 7\n", sopstest.Options{}, key.Recipient)
	fsys := chartFiles("charts/web/values-secret.yaml", enc)
	objs, err := RenderWith(fsys, "charts/web", Source{}, RenderOptions{AgeKeys: []string{key.Identity}, Helm: HelmOptions{ValuesFiles: []string{"values-secret.yaml"}}})
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range objs {
		if o.Key.Kind == "Deployment" {
			if r, _, _ := nested(o.Obj().Object, []string{"spec", "replicas"}); r != int64(7) {
				t.Errorf("replicas = %v, want 7 from the encrypted values file", r)
			}
			return
		}
	}
	t.Fatal("no Deployment")
}

func TestRenderHelmErrors(t *testing.T) {
	tests := []struct {
		name     string
		fsys     fstest.MapFS
		helm     HelmOptions
		wantPath string
		wantLine int
		wantMsg  string
	}{
		{"nil pointer in a template", chartFiles("charts/web/templates/deployment.yaml", "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: x\n  labels:\n    a: {{ .Values.missing.field }}\n"),
			HelmOptions{}, "charts/web/templates/deployment.yaml", 6, "nil pointer"},
		{"fail in a subchart template", chartFiles("charts/web/charts/cache/templates/cm.yaml", "\n\n{{ fail \"size must be set\" }}\n"),
			HelmOptions{}, "charts/web/charts/cache/templates/cm.yaml", 3, "size must be set"},
		{"template does not parse", chartFiles("charts/web/templates/service.yaml", "kind: Service\nname: {{ .Values.x \n"),
			HelmOptions{}, "charts/web/templates/service.yaml", 3, "unclosed action started at web/templates/service.yaml:2"},
		{"output is not YAML", chartFiles("charts/web/templates/service.yaml", "kind: Service\n  bad: [\n"),
			HelmOptions{}, "charts/web/templates/service.yaml", 0, "YAML parse error"},
		{"object without a name", chartFiles("charts/web/templates/service.yaml", "apiVersion: v1\nkind: Service\nmetadata: {}\n"),
			HelmOptions{}, "charts/web/templates/service.yaml", 0, "lacks metadata.name"},
		{"missing values file", chartFiles(), HelmOptions{ValuesFiles: []string{"values-nope.yaml"}}, "charts/web/values-nope.yaml", 0, "file does not exist"},
		{"values file does not parse", chartFiles("charts/web/values-prod.yaml", "a: 1\nb: [\n"), HelmOptions{ValuesFiles: []string{"values-prod.yaml"}}, "charts/web/values-prod.yaml", 2, "did not find expected node content"},
		{"values outside the repository", chartFiles(), HelmOptions{ValuesFiles: []string{"../../../x.yaml"}}, "../../../x.yaml", 0, "outside the repository"},
		{"missing dependency", chartFiles("charts/web/charts/cache/Chart.yaml", "", "charts/web/charts/cache/values.yaml", "", "charts/web/charts/cache/templates/cm.yaml", ""),
			HelmOptions{}, "charts/web/Chart.yaml", 0, "dependencies cache are not in charts/"},
		{"broken Chart.yaml", chartFiles("charts/web/Chart.yaml", "apiVersion: v2\nname: [web\n"), HelmOptions{}, "charts/web/Chart.yaml", 2, "load chart"},
		{"broken values.yaml", chartFiles("charts/web/values.yaml", "a: 1\nb: c: d\n"), HelmOptions{}, "charts/web/values.yaml", 2, "cannot load values.yaml"},
		{"library chart", chartFiles("charts/web/Chart.yaml", "apiVersion: v2\nname: web\nversion: 1.0.0\ntype: library\n"), HelmOptions{}, "charts/web/Chart.yaml", 0, "library charts are not installable"},
		{"values schema", chartFiles("charts/web/values.schema.json", `{"type": "object", "properties": {"replicaCount": {"type": "string"}}}`), HelmOptions{}, "charts/web/Chart.yaml", 0, "replicaCount"},
		{"bad release name", chartFiles(), HelmOptions{ReleaseName: "Not_Valid"}, "charts/web/Chart.yaml", 0, "release name"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := RenderWith(tt.fsys, "charts/web", Source{}, RenderOptions{Helm: tt.helm})
			t.Log(err)
			var re *RenderError
			if !errors.As(err, &re) {
				t.Fatalf("err = %v (%T), want a RenderError", err, err)
			}
			if re.Path != tt.wantPath || re.Line != tt.wantLine {
				t.Errorf("at %s:%d, want %s:%d", re.Path, re.Line, tt.wantPath, tt.wantLine)
			}
			if !strings.Contains(err.Error(), tt.wantMsg) {
				t.Errorf("err = %q, want containing %q", err, tt.wantMsg)
			}
		})
	}
}

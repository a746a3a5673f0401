package source

import (
	"errors"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/driftguard/driftguard/render"
)

// TestFetchAsksCapabilitiesOnlyForCharts: CapabilitiesFrom is asked when a
// chart is rendered, and when its cached render is about to be used; a
// changed answer renders the chart's revision again, an unchanged one
// keeps the cached snapshot, and a path without a chart never asks (so a
// change of the cluster renders no plain manifests again).
func TestFetchAsksCapabilitiesOnlyForCharts(t *testing.T) {
	gs := newGitServer(t)
	repo, err := gs.NewRepo("caps")
	if err != nil {
		t.Fatal(err)
	}
	files := map[string]string{"plain/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: plain\n  namespace: shop\n"}
	for name, f := range capsChart() {
		files["chart/"+strings.TrimPrefix(name, "c/")] = string(f.Data)
	}
	mustPush(t, repo, files, "first")
	f := NewGitFetcher(t.TempDir(), logr.Discard())
	ctx := t.Context()
	caps := &render.Capabilities{KubeVersion: "v1.37.2", APIVersions: []string{"v1"}}
	var asked int
	var failing error
	req := func(p string) Request {
		return Request{URL: gs.url("caps"), Ref: "main", Path: p, Render: render.RenderOptions{Helm: render.HelmOptions{
			CapabilitiesFrom: func() (*render.Capabilities, error) { asked++; return caps, failing },
		}}}
	}
	kube := func(s *render.Snapshot) string {
		t.Helper()
		return capsSettings(t, s.Objects)["kube"].(string)
	}

	last := map[string]*render.Snapshot{}
	for _, step := range []struct {
		name      string
		path      string
		change    func()
		wantAsked int  // calls of CapabilitiesFrom during the fetch
		wantSame  bool // the snapshot of the step before
		wantKube  string
	}{
		{name: "first render of the chart", path: "chart", wantAsked: 1, wantKube: "v1.37.2"},
		{name: "unchanged: the cached snapshot, asked once to check", path: "chart", wantAsked: 1, wantSame: true, wantKube: "v1.37.2"},
		{name: "an upgraded cluster: rendered again", path: "chart", change: func() { caps = &render.Capabilities{KubeVersion: "v1.38.0", APIVersions: []string{"v1"}} }, wantAsked: 2, wantKube: "v1.38.0"},
		{name: "a new kind: rendered again", path: "chart", change: func() {
			caps = &render.Capabilities{KubeVersion: "v1.38.0", APIVersions: []string{"v1", "example.com/v1/Widget"}}
		}, wantAsked: 2, wantKube: "v1.38.0"},
		{name: "the cluster cannot be asked: the cached render stays", path: "chart", change: func() { failing = errors.New("discovery down") }, wantAsked: 1, wantSame: true, wantKube: "v1.38.0"},
		{name: "plain manifests never ask", path: "plain", change: func() { failing = nil }, wantAsked: 0},
		{name: "plain manifests, the cluster changed: cached", path: "plain", change: func() { caps = &render.Capabilities{KubeVersion: "v1.39.0"} }, wantAsked: 0, wantSame: true},
	} {
		if step.change != nil {
			step.change()
		}
		before := asked
		_, snap, err := f.Fetch(ctx, req(step.path))
		if err != nil {
			t.Fatalf("%s: %v", step.name, err)
		}
		if n := asked - before; n != step.wantAsked {
			t.Errorf("%s: asked %d times, want %d", step.name, n, step.wantAsked)
		}
		if same := snap == last[step.path]; same != step.wantSame {
			t.Errorf("%s: the cached snapshot %v, want %v", step.name, same, step.wantSame)
		}
		if step.wantKube != "" && kube(snap) != step.wantKube {
			t.Errorf("%s: rendered with %s, want %s", step.name, kube(snap), step.wantKube)
		}
		last[step.path] = snap
	}
}

// capsChart is a chart that reads the cluster: .Capabilities and values
// a Guard takes from ConfigMaps and Secrets.
func capsChart() fstest.MapFS {
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

func capsSettings(t *testing.T, objs []*render.Object) map[string]any {
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

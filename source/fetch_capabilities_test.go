package source

import (
	"errors"
	"testing"

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
	mustPush(t, repo, map[string]string{
		"plain/cm.yaml":    "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: plain\n  namespace: shop\n",
		"chart/Chart.yaml": "apiVersion: v2\nname: c\nversion: 0.1.0\n",
		// The chart tells which Kubernetes version it was rendered for.
		"chart/templates/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings\ndata:\n  kube: {{ .Capabilities.KubeVersion.Version | quote }}\n",
	}, "first")
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
		for _, o := range s.Objects {
			if o.Key.Kind == "ConfigMap" && o.Key.Name == "settings" {
				v, _, _ := unstructured.NestedString(o.Obj().Object, "data", "kube")
				return v
			}
		}
		t.Fatalf("no ConfigMap settings among %d objects", len(s.Objects))
		return ""
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

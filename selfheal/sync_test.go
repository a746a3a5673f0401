package selfheal

import (
	"fmt"
	"slices"
	"testing"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/driftguard/driftguard/drift"
)

func TestDriftStateKeepsPaths(t *testing.T) {
	it := item{gvk: schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}, namespace: "ns", name: "cm"}
	var many []drift.Change
	for i := range 15 {
		many = append(many, drift.Change{Path: fmt.Sprintf("/data/k%d", i)})
	}
	s := newDriftState()
	for _, step := range []struct {
		name    string
		paths   []string
		news    bool
		want    []string
		drifted bool
	}{
		{name: "first drift", paths: changedPaths([]drift.Change{{Path: "/data/a"}, {Path: "/data/a"}, {Path: "/data/b", Added: true}}), news: true, want: []string{"/data/a", "/data/b"}, drifted: true},
		{name: "the same paths again", paths: []string{"/data/a", "/data/b"}, want: []string{"/data/a", "/data/b"}, drifted: true},
		{name: "other paths", paths: []string{"/data/c"}, news: true, want: []string{"/data/c"}, drifted: true},
		{name: "missing", paths: nil, news: true, drifted: true},
		{name: "back with no paths listed", paths: []string{}, news: true, want: []string{}, drifted: true},
		{name: "bounded", paths: changedPaths(many), news: true, want: changedPaths(many[:maxPathsKept]), drifted: true},
	} {
		if news := s.mark(it, "g", step.paths); news != step.news {
			t.Fatalf("%s: news %v, want %v", step.name, news, step.news)
		}
		got, drifted := s.pathsOf(it)
		if drifted != step.drifted || !slices.Equal(got, step.want) || (got == nil) != (step.want == nil) {
			t.Fatalf("%s: paths %q (drifted %v), want %q", step.name, got, drifted, step.want)
		}
	}
	if len(changedPaths(many)) != maxPathsKept {
		t.Fatalf("changedPaths kept %d paths", len(changedPaths(many)))
	}
	if g := s.clear(it); g != "g" {
		t.Fatalf("clear returned %q", g)
	}
	if _, drifted := s.pathsOf(it); drifted {
		t.Fatal("cleared object still drifted")
	}
}

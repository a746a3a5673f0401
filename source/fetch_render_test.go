package source

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/go-logr/logr"

	"github.com/driftguard/driftguard/render"
)

// TestFetchRenderOptionsCache: a snapshot is cached by (revision, path,
// render options). The same options cost no fetch and no render; new
// variables render the cached commit again without fetching; going back
// to earlier options finds their snapshot still cached.
func TestFetchRenderOptionsCache(t *testing.T) {
	gs := newGitServer(t)
	repo, err := gs.NewRepo("vars")
	if err != nil {
		t.Fatal(err)
	}
	url := gs.url("vars")
	sha := mustPush(t, repo, map[string]string{
		"app/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm-${ENV}\n  namespace: shop\n",
	}, "first")
	f := NewGitFetcher(t.TempDir(), logr.Discard())
	ctx := t.Context()
	req := func(vars map[string]string) Request {
		return Request{URL: url, Ref: "main", Path: "app", Render: render.RenderOptions{Vars: vars}}
	}
	name := func(s *render.Snapshot) string { return s.Objects[0].Key.Name }

	_, prod, err := f.Fetch(ctx, req(map[string]string{"ENV": "prod"}))
	if err != nil || name(prod) != "cm-prod" {
		t.Fatalf("first fetch: %v", err)
	}
	packs := gs.packs.Load()

	_, again, err := f.Fetch(ctx, req(map[string]string{"ENV": "prod"}))
	if err != nil || again != prod {
		t.Fatalf("same options: snapshot %p, want the cached %p (%v)", again, prod, err)
	}
	_, staging, err := f.Fetch(ctx, req(map[string]string{"ENV": "staging"}))
	if err != nil || name(staging) != "cm-staging" || staging == prod {
		t.Fatalf("new vars: %v", err)
	}
	_, back, err := f.Fetch(ctx, req(map[string]string{"ENV": "prod"}))
	if err != nil || back != prod {
		t.Fatalf("earlier options: snapshot %p, want the cached %p (%v)", back, prod, err)
	}
	if n := gs.packs.Load() - packs; n != 0 {
		t.Fatalf("changing only the render options made %d pack requests", n)
	}

	// Substitution off: the manifest is left alone.
	_, raw, err := f.Fetch(ctx, req(nil))
	if err != nil || name(raw) != "cm-${ENV}" {
		t.Fatalf("no vars: %v", err)
	}
	// A missing variable is a render error of this revision, cached too.
	rev, _, err := f.Fetch(ctx, req(map[string]string{}))
	var re *render.RenderError
	if rev != sha || !errors.As(err, &re) || re.Path != "app/cm.yaml" {
		t.Fatalf("unset variable: %s %v", rev, err)
	}
}

func TestRenderOptionsHash(t *testing.T) {
	base := render.RenderOptions{Vars: map[string]string{"A": "1", "B": "2"}, Helm: render.HelmOptions{ReleaseName: "r"}, AgeKeys: []string{"k1", "k2"}}
	same := render.RenderOptions{Vars: map[string]string{"B": "2", "A": "1"}, Helm: render.HelmOptions{ReleaseName: "r"}, AgeKeys: []string{"k2", "k1"}}
	if base.Hash() != same.Hash() {
		t.Error("equal options hash differently")
	}
	for name, o := range map[string]render.RenderOptions{
		"no vars":      {Helm: base.Helm, AgeKeys: base.AgeKeys},
		"empty vars":   {Vars: map[string]string{}, Helm: base.Helm, AgeKeys: base.AgeKeys},
		"other value":  {Vars: map[string]string{"A": "1", "B": "3"}, Helm: base.Helm, AgeKeys: base.AgeKeys},
		"other key":    {Vars: base.Vars, Helm: base.Helm, AgeKeys: []string{"k1"}},
		"values":       {Vars: base.Vars, Helm: render.HelmOptions{ReleaseName: "r", Values: []byte(`{"a":1}`)}, AgeKeys: base.AgeKeys},
		"values files": {Vars: base.Vars, Helm: render.HelmOptions{ReleaseName: "r", ValuesFiles: []string{"v.yaml"}}, AgeKeys: base.AgeKeys},
	} {
		if o.Hash() == base.Hash() {
			t.Errorf("%s: same hash as the base options", name)
		}
	}
	if (render.RenderOptions{}).Hash() == (render.RenderOptions{Vars: map[string]string{}}).Hash() {
		t.Error("substitution on and off hash the same")
	}
}

func TestRenderOptionsPrintNoValues(t *testing.T) {
	o := render.RenderOptions{Vars: map[string]string{"PASSWORD": "hunter2"}, AgeKeys: []string{"AGE-SECRET-KEY-1XYZ"}, Helm: render.HelmOptions{ReleaseName: "web"}}
	for _, s := range []string{o.String(), fmt.Sprintf("%v", o), fmt.Sprintf("%+v", o), fmt.Sprint(o.MarshalLog())} {
		if strings.Contains(s, "hunter2") || strings.Contains(s, "AGE-SECRET-KEY") || !strings.Contains(s, "PASSWORD") {
			t.Errorf("printed options %q: want variable names, no values or keys", s)
		}
	}
}

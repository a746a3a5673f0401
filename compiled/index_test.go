package compiled

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/driftguard/driftguard/drift"
	"github.com/driftguard/driftguard/render"
)

func obj(apiVersion, kind, ns, name, enforcement, path string, line int) *render.Object {
	u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": apiVersion, "kind": kind,
		"metadata": map[string]any{"name": name}, "spec": map[string]any{"replicas": int64(1)}}}
	if ns != "" {
		u.SetNamespace(ns)
	}
	if enforcement != "" {
		u.SetAnnotations(map[string]string{"driftguard.io/enforcement": enforcement})
	}
	return render.NewObject(u, render.Source{Path: path, Line: line})
}

func mapper() meta.RESTMapper {
	m := meta.NewDefaultRESTMapper(nil)
	m.Add(schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}, meta.RESTScopeNamespace)
	m.Add(schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"}, meta.RESTScopeNamespace)
	m.Add(schema.GroupVersionKind{Group: "rbac.authorization.k8s.io", Version: "v1", Kind: "ClusterRole"}, meta.RESTScopeRoot)
	return m
}

func TestBuildIndex(t *testing.T) {
	rules, err := drift.CompileRules([]drift.RuleSpec{
		{Kind: "Deployment", Name: "scaled", JSONPointers: []string{"/spec/replicas"}},
		{Kind: "Deployment", Name: "listed", JSONPointers: []string{"/spec/template/spec/containers/0/image"}},
		{Kind: "ConfigMap", ManagedFieldsManagers: []string{"injector"}, Users: []string{"system:serviceaccount:x:injector"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	snap, err := render.NewSnapshot("https://user:token@git.example/infra.git", "9f2c1e0aa", []*render.Object{
		obj("v1", "ConfigMap", "shop", "settings", "", "config/a|b.yaml", 3),
		obj("v1", "ConfigMap", "shop", "loose", "off", "config/loose.yaml", 1),
		obj("v1", "ConfigMap", "shop", "watched", "warn", "config/watched.yaml", 1),
		obj("apps/v1", "Deployment", "shop", "scaled", "", "apps/scaled.yaml", 1),
		obj("apps/v1", "Deployment", "shop", "listed", "", "apps/listed.yaml", 1),
		obj("rbac.authorization.k8s.io/v1", "ClusterRole", "", "reader", "", "rbac.yaml", 1),
		obj("example.com/v1", "Widget", "shop", "unknown-kind", "", "w.yaml", 1),
	})
	if err != nil {
		t.Fatal(err)
	}
	ix := BuildIndex([]Guard{{Name: "shop", Snapshot: snap, Rules: rules}}, mapper())
	shop := ix.Namespaces["shop"]
	scaledShape := Shape{Paths: [][]string{{"spec", "replicas"}}}
	cmShape := Shape{Defer: []string{"system:serviceaccount:x:injector"}}
	for key, want := range map[string]string{
		Key("", "configmaps", "settings"):    "deny|" + cmShape.ID() + "|shop|config/a%7Cb.yaml:3",
		Key("", "configmaps", "watched"):     "warn|" + cmShape.ID() + "|shop|config/watched.yaml:1",
		Key("apps", "deployments", "scaled"): "deny|" + scaledShape.ID() + "|shop|apps/scaled.yaml:1",
		"guard.shop":                         "9f2c1e0aa|https://user:xxxxx@git.example/infra.git",
	} {
		got := shop[key]
		if key == "guard.shop" {
			// The URL without its credentials, however redact writes it.
			if !strings.HasPrefix(got, "9f2c1e0aa|https://") || strings.Contains(got, "token") {
				t.Errorf("%s = %q", key, got)
			}
			continue
		}
		if got != want {
			t.Errorf("%s = %q, want %q", key, got, want)
		}
	}
	for _, key := range []string{Key("", "configmaps", "loose"), Key("apps", "deployments", "listed")} {
		if v, ok := shop[key]; ok {
			t.Errorf("%s is indexed (%q): enforcement off and a list path are the webhook's", key, v)
		}
	}
	if len(ix.Fallbacks) != 1 || ix.Fallbacks[0].Object.Name != "listed" {
		t.Errorf("fallbacks %+v", ix.Fallbacks)
	}
	if got := ix.Namespaces[""][Key("rbac.authorization.k8s.io", "clusterroles", "reader")]; !strings.HasPrefix(got, "deny||shop|") {
		t.Errorf("cluster-scoped entry %q", got)
	}
	if len(ix.Shapes) != 2 {
		t.Errorf("shapes %+v", ix.Shapes)
	}
	if g, ok := entryGuard(Key("", "configmaps", "settings"), shop[Key("", "configmaps", "settings")]); !ok || g != "shop" {
		t.Errorf("entryGuard: %q %v", g, ok)
	}
	if r, ok := resourceOf(Key("rbac.authorization.k8s.io", "clusterroles", "reader"), "deny||g|f.yaml:1"); !ok || r.Group != "rbac.authorization.k8s.io" || r.Resource != "clusterroles" || r.Mode != "deny" {
		t.Errorf("resourceOf: %+v", r)
	}
}

// The stamp policy matches the resource of every managed object, those of
// objects no policy decides (enforcement revert, dryrun, off) too; the
// deny and warn policies only the resources of their modes.
func TestStampCoversEveryManagedResource(t *testing.T) {
	snap, err := render.NewSnapshot("https://git.example/a.git", "rev1", []*render.Object{
		obj("v1", "ConfigMap", "shop", "decided", "", "a.yaml", 1),
		obj("apps/v1", "Deployment", "shop", "reverted", "revert", "b.yaml", 1),
	})
	if err != nil {
		t.Fatal(err)
	}
	ix := BuildIndex([]Guard{{Name: "g", Snapshot: snap}}, mapper())
	c := Config{Name: "dg", Namespace: "dg-system", GuardUsers: []string{"dg"}, Resources: ix.Resources, Shapes: ix.Shapes}
	mp, _ := c.StampPolicy()
	var stamped []string
	for _, r := range mp.Spec.MatchConstraints.ResourceRules {
		stamped = append(stamped, r.Resources...)
	}
	if strings.Join(stamped, ",") != "configmaps,deployments" {
		t.Errorf("the stamp policy matches %v, want configmaps and deployments", stamped)
	}
	policies, _ := c.Policies()
	for _, p := range policies {
		for _, r := range p.Spec.MatchConstraints.ResourceRules {
			if strings.Contains(strings.Join(r.Resources, ","), "deployments") {
				t.Errorf("policy %s matches deployments, which no object of which it decides", p.Name)
			}
		}
	}
}

// A Guard whose snapshot, enforcement and rules did not change keeps its
// part of the index; a change of any rebuilds it.
func TestBuilderKeepsParts(t *testing.T) {
	snap := func(rev string) *render.Snapshot {
		s, err := render.NewSnapshot("https://git.example/a.git", rev, []*render.Object{obj("v1", "ConfigMap", "shop", "a", "", "a.yaml", 1)})
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	b := NewBuilder()
	s1 := snap("rev1")
	first := b.Build([]Guard{{Name: "g", Snapshot: s1}}, mapper())
	part := b.parts["g"]
	again := b.Build([]Guard{{Name: "g", Snapshot: s1}}, mapper())
	if b.parts["g"] != part || again.Namespaces["shop"]["guard.g"] != first.Namespaces["shop"]["guard.g"] {
		t.Fatal("an unchanged Guard was rebuilt")
	}
	warn := b.Build([]Guard{{Name: "g", Snapshot: s1, Enforcement: "warn"}}, mapper())
	if got := warn.Namespaces["shop"][Key("", "configmaps", "a")]; !strings.HasPrefix(got, "warn|") {
		t.Fatalf("enforcement change: %q", got)
	}
	next := b.Build([]Guard{{Name: "g", Snapshot: snap("rev2")}}, mapper())
	if !strings.HasPrefix(next.Namespaces["shop"]["guard.g"], "rev2|") {
		t.Fatalf("new revision: %q", next.Namespaces["shop"]["guard.g"])
	}
	if gone := b.Build(nil, mapper()); len(gone.Namespaces) != 0 || len(b.parts) != 0 {
		t.Fatalf("a deleted Guard stays: %v", gone.Namespaces)
	}
}

// The shapes in use are recorded in the cluster index; a process that
// starts restores those its kept entries use, and only a record that is
// the shape of its ID.
func TestShapesRecordedAndRestored(t *testing.T) {
	s := Shape{Paths: [][]string{{"data", "tuned"}}, Defer: []string{"injector"}}
	ix := Index{Namespaces: map[string]map[string]string{}, Shapes: []Shape{s}}
	ix.recordShapes()
	recorded := ix.Namespaces[""]
	if recorded[shapeKeyPrefix+s.ID()] == "" {
		t.Fatalf("shape not recorded: %v", recorded)
	}
	if _, ok := entryGuard(shapeKeyPrefix+s.ID(), recorded[shapeKeyPrefix+s.ID()]); ok {
		t.Error("a shape record is read as a Guard's entry")
	}
	for _, tc := range []struct {
		name     string
		id       string
		recorded map[string]string
		want     int
	}{
		{"restored", s.ID(), recorded, 1},
		{"no record: compared whole", s.ID(), nil, 0},
		{"a record of another shape under this ID", s.ID(), map[string]string{shapeKeyPrefix + s.ID(): `{"Paths":[["data","other"]]}`}, 0},
		{"a path into a list", "x", map[string]string{shapeKeyPrefix + "x": `{"Paths":[["spec","containers","0"]]}`}, 0},
		{"the empty shape", "", recorded, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fresh := Index{Namespaces: map[string]map[string]string{}}
			fresh.restoreShape(tc.id, tc.recorded)
			if len(fresh.Shapes) != tc.want {
				t.Errorf("shapes %+v, want %d", fresh.Shapes, tc.want)
			}
		})
	}
	if got := entryShape("deny|" + s.ID() + "|shop|a.yaml:1"); got != s.ID() {
		t.Errorf("entryShape = %q", got)
	}
}

// An object another Guard owned passes to this one when its owner lets it
// go, with no change of this Guard's snapshot: its part is built again and
// the object is in the index.
func TestBuilderFollowsOwnership(t *testing.T) {
	s, err := render.NewSnapshot("https://git.example/b.git", "rev1", []*render.Object{obj("v1", "ConfigMap", "shop", "a", "", "a.yaml", 1)})
	if err != nil {
		t.Fatal(err)
	}
	owned := false
	g := Guard{Name: "b", Snapshot: s, Owns: func(render.ObjectKey) bool { return owned }}
	b := NewBuilder()
	if ix := b.Build([]Guard{g}, mapper()); ix.Namespaces["shop"][Key("", "configmaps", "a")] != "" {
		t.Fatalf("an object another Guard owns is in b's part: %v", ix.Namespaces)
	}
	owned = true
	ix := b.Build([]Guard{g}, mapper())
	if got := ix.Namespaces["shop"][Key("", "configmaps", "a")]; !strings.Contains(got, "|b|a.yaml:1") {
		t.Fatalf("the object b now owns: %q", got)
	}
}

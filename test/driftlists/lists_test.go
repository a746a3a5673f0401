package driftlists

import (
	"context"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/driftguard/driftguard/apply"
	"github.com/driftguard/driftguard/drift"
	"github.com/driftguard/driftguard/drift/schemas"
	"github.com/driftguard/driftguard/render"
	"github.com/driftguard/driftguard/test/wait"
)

// object decodes a YAML manifest as Git's object.
func object(t *testing.T, y string) *render.Object {
	t.Helper()
	u := &unstructured.Unstructured{}
	if err := yaml.Unmarshal([]byte(y), &u.Object); err != nil {
		t.Fatalf("fixture: %v", err)
	}
	return render.NewObject(u, render.Source{Path: t.Name() + ".yaml", Line: 1})
}

// applier is the guard's Applier, with its kind schemas read from the API
// server's OpenAPI.
func applier() *apply.Applier {
	return &apply.Applier{Client: admin, Schemas: schemas.New(disc, logr.Discard())}
}

// applyAll applies objs as the guard does and fails the test on any error.
func applyAll(t *testing.T, a *apply.Applier, objs ...*render.Object) {
	t.Helper()
	cs, err := a.Apply(context.Background(), objs, apply.Options{})
	if err != nil {
		t.Fatalf("apply: %v", err)
	}
	for _, e := range cs {
		if e.Err != nil {
			t.Fatalf("apply %s: %v", e.Object.Key, e.Err)
		}
	}
}

func get(t *testing.T, o *render.Object) *unstructured.Unstructured {
	t.Helper()
	live := &unstructured.Unstructured{}
	live.SetGroupVersionKind(o.GVK())
	if err := admin.Get(context.Background(), client.ObjectKey{Namespace: o.Key.Namespace, Name: o.Key.Name}, live); err != nil {
		t.Fatalf("get %s: %v", o.Key, err)
	}
	return live
}

// update writes live as another person would (an update, not an apply).
func update(t *testing.T, live *unstructured.Unstructured, edit func(map[string]any)) {
	t.Helper()
	edit(live.Object)
	if err := admin.Update(context.Background(), live, client.FieldOwner("alice")); err != nil {
		t.Fatalf("update %s: %v", live.GetName(), err)
	}
}

// driftOf is the guard's comparison of o with the cluster: its options
// (with the kind's schema) and its server values.
func driftOf(t *testing.T, a *apply.Applier, o *render.Object) []string {
	t.Helper()
	live := get(t, o)
	got := drift.Paths(o.Drift(live.Object, a.Options(o.Obj(), live.Object)))
	if len(got) == 0 {
		return nil
	}
	return got
}

func namespace(t *testing.T, name string) {
	t.Helper()
	ns := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": name}}}
	if err := admin.Create(context.Background(), ns); err != nil {
		t.Fatalf("namespace %s: %v", name, err)
	}
}

const mounts = `
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: mounts}
spec:
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers:
      - name: web
        image: nginx:1.27
        ports: [{containerPort: 80}]
        volumeMounts:
        - {name: config, mountPath: /etc/app/a.conf, subPath: a.conf}
        - {name: config, mountPath: /etc/app/b.conf, subPath: b.conf}
      volumes: [{name: config, configMap: {name: cfg}}]
`

// TestVolumeMountsOfOneVolume: two mounts of one volume at two subPaths
// (volumeMounts are keyed by mountPath) are in sync as applied, and a change
// to the first is drift, also once a server-side dry run has told the
// server values.
func TestVolumeMountsOfOneVolume(t *testing.T) {
	namespace(t, "mounts")
	a := applier()
	if a.Schemas.For(schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"}) == nil {
		t.Fatal("no schema for apps/v1 Deployment from the API server")
	}
	o := object(t, mounts)
	applyAll(t, a, o)
	if got := driftOf(t, a, o); got != nil {
		t.Fatalf("identical Deployment drifted: %v", got)
	}
	update(t, get(t, o), func(m map[string]any) {
		c := m["spec"].(map[string]any)["template"].(map[string]any)["spec"].(map[string]any)["containers"].([]any)[0].(map[string]any)
		c["volumeMounts"].([]any)[0].(map[string]any)["subPath"] = "evil.conf"
	})
	want := []string{"/spec/template/spec/containers/0/volumeMounts/0/subPath"}
	if got := driftOf(t, a, o); !reflect.DeepEqual(got, want) {
		t.Fatalf("after the first mount changed: drift %v, want %v", got, want)
	}
	// The drift watcher asks a dry run when it first sees a difference.
	if err := a.DryRun(context.Background(), o, get(t, o)); err != nil {
		t.Fatalf("dry run: %v", err)
	}
	if got := driftOf(t, a, o); !reflect.DeepEqual(got, want) {
		t.Fatalf("after a dry run: drift %v, want %v", got, want)
	}
	applyAll(t, a, o)
	if got := driftOf(t, a, o); got != nil {
		t.Fatalf("reverted Deployment drifted: %v", got)
	}
}

const widget = `
apiVersion: lists.driftguard.io/v1
kind: Widget
metadata: {name: NAME, namespace: widgets}
spec:
  plain: [{name: a, value: "1"}, {name: b, value: "2"}]
  tags: [x, v]
  routes: [{host: a, backend: one}, {host: a, port: 8080, backend: two}]
  nullable: []
`

// TestCustomResourceLists: a custom resource's lists follow its CRD's
// schema as the API server serves it.
func TestCustomResourceLists(t *testing.T) {
	namespace(t, "widgets")
	a := applier()
	spec := func(m map[string]any) map[string]any { return m["spec"].(map[string]any) }
	tests := []struct {
		name string
		edit func(m map[string]any)
		want []string
	}{
		{name: "set reordered with one more", edit: func(m map[string]any) { spec(m)["tags"] = []any{"z", "v", "x"} }},
		{name: "set member removed", edit: func(m map[string]any) { spec(m)["tags"] = []any{"v"} }, want: []string{"/spec/tags/0"}},
		{name: "map list reordered with one more", edit: func(m map[string]any) {
			r := spec(m)["routes"].([]any)
			spec(m)["routes"] = []any{r[1], map[string]any{"host": "b", "backend": "three"}, r[0]}
		}},
		{name: "map list element with the defaulted key changed", edit: func(m map[string]any) {
			spec(m)["routes"].([]any)[0].(map[string]any)["backend"] = "evil"
		}, want: []string{"/spec/routes/0/backend"}},
		{name: "map list key changed", edit: func(m map[string]any) {
			spec(m)["routes"].([]any)[0].(map[string]any)["port"] = int64(81)
		}, want: []string{"/spec/routes/0"}},
		{name: "atomic list reordered", edit: func(m map[string]any) {
			p := spec(m)["plain"].([]any)
			p[0], p[1] = p[1], p[0]
		}, want: []string{"/spec/plain/0/name", "/spec/plain/0/value", "/spec/plain/1/name", "/spec/plain/1/value"}},
		{name: "nullable list set to null", edit: func(m map[string]any) { spec(m)["nullable"] = nil }, want: []string{"/spec/nullable"}},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := object(t, strings.ReplaceAll(widget, "NAME", fmt.Sprintf("w%d", i)))
			applyAll(t, a, o)
			if got := driftOf(t, a, o); got != nil {
				t.Fatalf("as applied: drift %v", got)
			}
			update(t, get(t, o), tt.edit)
			if got := driftOf(t, a, o); !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("drift %v, want %v", got, tt.want)
			}
		})
	}
}

// TestNullAsTheServerStoresIt: without server values (a restarted guard
// before any dry run), Git's empty values are in sync with the nulls the API
// server stores for them in built-in kinds.
func TestNullAsTheServerStoresIt(t *testing.T) {
	namespace(t, "nulls")
	a := applier()
	ctx := context.Background()
	role := object(t, `{apiVersion: rbac.authorization.k8s.io/v1, kind: Role, metadata: {name: r, namespace: nulls}, rules: []}`)
	secret := object(t, `{apiVersion: v1, kind: Secret, metadata: {name: s, namespace: nulls}, stringData: {empty: ""}}`)
	for _, o := range []*render.Object{role, secret} {
		if err := admin.Create(ctx, o.Obj().DeepCopy()); err != nil {
			t.Fatalf("create %s: %v", o.Key, err)
		}
		if _, checked := o.ServerValues(); checked {
			t.Fatal("server values before any apply")
		}
	}
	if rules, ok := get(t, role).Object["rules"]; !ok || rules != nil {
		t.Fatalf("the API server stored rules: [] as %v (present %v), not null", rules, ok)
	}
	for _, o := range []*render.Object{role, secret} {
		if got := driftOf(t, a, o); got != nil {
			t.Errorf("%s: drift %v", o.Key, got)
		}
	}
}

// TestClusterScopedWithNamespace: a cluster-scoped object that Git gives a
// namespace is keyed as its live self, so the guard finds and guards it.
func TestClusterScopedWithNamespace(t *testing.T) {
	a := applier()
	objs := []*render.Object{
		object(t, `{apiVersion: rbac.authorization.k8s.io/v1, kind: ClusterRole, metadata: {name: lists-reader, namespace: shop}, rules: [{apiGroups: [""], resources: [pods], verbs: [get]}]}`),
		object(t, `{apiVersion: lists.driftguard.io/v1, kind: Gadget, metadata: {name: g, namespace: shop}, spec: {size: 1}}`),
	}
	snap, err := render.NewSnapshot("file:///lists", "r1", objs)
	if err != nil {
		t.Fatal(err)
	}
	if snap, err = apply.Decorate(admin, "lists", snap); err != nil {
		t.Fatal(err)
	}
	applyAll(t, a, snap.Objects...)
	for _, o := range snap.Objects {
		live := get(t, o)
		key := render.KeyOf(live)
		found, ok := snap.Get(key)
		if !ok {
			t.Fatalf("live %s not found in the snapshot (keys %v)", key, snap.Objects)
		}
		found.SetServerValues(nil) // compare with Git's text, as before any apply
		if got := drift.Paths(found.Drift(live.Object, a.Options(found.Obj(), live.Object))); len(got) != 0 {
			t.Errorf("%s: drift %v", key, got)
		}
	}
}

// TestDecorateScopes: Decorate gives a namespaced object Git leaves without
// a namespace "default", drops the namespace Git gives a cluster-scoped
// one, and leaves an object of a kind the API server does not serve as Git
// wrote it; every object of a kind as the first.
func TestDecorateScopes(t *testing.T) {
	objs := []*render.Object{
		object(t, `{apiVersion: v1, kind: ConfigMap, metadata: {name: scopes-a}}`),
		object(t, `{apiVersion: v1, kind: ConfigMap, metadata: {name: scopes-b}}`),
		object(t, `{apiVersion: v1, kind: ConfigMap, metadata: {name: scopes-c, namespace: shop}}`),
		object(t, `{apiVersion: rbac.authorization.k8s.io/v1, kind: ClusterRole, metadata: {name: scopes-a, namespace: shop}}`),
		object(t, `{apiVersion: rbac.authorization.k8s.io/v1, kind: ClusterRole, metadata: {name: scopes-b, namespace: shop}}`),
		object(t, `{apiVersion: nothere.driftguard.io/v1, kind: Nothing, metadata: {name: scopes-a}}`),
		object(t, `{apiVersion: nothere.driftguard.io/v1, kind: Nothing, metadata: {name: scopes-b, namespace: shop}}`),
	}
	snap, err := render.NewSnapshot("file:///scopes", "r1", objs)
	if err != nil {
		t.Fatal(err)
	}
	if snap, err = apply.Decorate(admin, "scopes", snap); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"ConfigMap/scopes-a": "default", "ConfigMap/scopes-b": "default", "ConfigMap/scopes-c": "shop",
		"ClusterRole/scopes-a": "", "ClusterRole/scopes-b": "",
		"Nothing/scopes-a": "", "Nothing/scopes-b": "shop",
	}
	if len(snap.Objects) != len(want) {
		t.Fatalf("%d objects decorated, want %d", len(snap.Objects), len(want))
	}
	for _, o := range snap.Objects {
		name := o.Key.Kind + "/" + o.Key.Name
		ns, ok := want[name]
		if !ok {
			t.Fatalf("unexpected object %s", o.Key)
		}
		if got := o.Obj().GetNamespace(); got != ns || o.Key.Namespace != ns {
			t.Errorf("%s: namespace %q, key namespace %q; want %q", name, got, o.Key.Namespace, ns)
		}
	}
}

// TestSchemaOfNewDefinition: the schema of a kind whose CRD the guard has
// just applied is read once the API server publishes it (Forget).
func TestSchemaOfNewDefinition(t *testing.T) {
	a := applier()
	gvk := schema.GroupVersionKind{Group: "new.driftguard.io", Version: "v1", Kind: "Gizmo"}
	if s := a.Schemas.For(gvk); s != nil {
		t.Fatal("a schema for a kind not served")
	}
	crd := object(t, tagsCRD(gvk.GroupKind()))
	applyAll(t, a, crd) // waits until established, then Forget
	drifts := func(want bool) { t.Helper(); tagsDrift(t, a.Schemas, gvk, want) }
	drifts(false) // a set
	// The definition changes the list to atomic: read again.
	crd.Obj().Object["spec"].(map[string]any)["versions"].([]any)[0].(map[string]any)["schema"].(map[string]any)["openAPIV3Schema"].(map[string]any)["properties"].(map[string]any)["spec"].(map[string]any)["properties"].(map[string]any)["tags"] = map[string]any{"type": "array", "items": map[string]any{"type": "string"}}
	applyAll(t, a, crd)
	drifts(true)
}

// tagsCRD is the definition of kind gk, namespaced and served as v1, whose
// spec.tags is a list of strings of type set.
func tagsCRD(gk schema.GroupKind) string {
	singular := strings.ToLower(gk.Kind)
	return fmt.Sprintf(`
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: %[1]ss.%[2]s}
spec:
  group: %[2]s
  scope: Namespaced
  names: {plural: %[1]ss, singular: %[1]s, kind: %[3]s, listKind: %[3]sList}
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            properties:
              tags: {type: array, x-kubernetes-list-type: set, items: {type: string}}
`, singular, gk.Group, gk.Kind)
}

// tagsDrift waits until an object of gvk whose spec.tags Git and the
// cluster hold in other orders is drift (want) or not, by the schema the
// cache gives: no drift while the list is a set, drift once atomic.
func tagsDrift(t *testing.T, cache *schemas.Cache, gvk schema.GroupVersionKind, want bool) {
	t.Helper()
	obj := func(tags ...any) map[string]any {
		return map[string]any{"apiVersion": gvk.GroupVersion().String(), "kind": gvk.Kind, "spec": map[string]any{"tags": tags}}
	}
	desired, live := obj("a", "b"), obj("b", "a")
	wait.Eventually(t, 60*time.Second, fmt.Sprintf("reordered tags drift %v", want), func() error {
		if got := drift.Compare(desired, live, drift.Options{Schema: cache.For(gvk)}); (len(got) != 0) != want {
			return fmt.Errorf("drift %v", got)
		}
		return nil
	})
}

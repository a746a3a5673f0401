package drift

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/managedfields"
	openapispec "k8s.io/kube-openapi/pkg/validation/spec"
)

// widgetModels is the OpenAPI of a custom resource with every list type, as
// the API server publishes a CRD's schema.
const widgetModels = `{
 "com.example.v1.Widget": {
  "type": "object",
  "x-kubernetes-group-version-kind": [{"group": "example.com", "version": "v1", "kind": "Widget"}],
  "properties": {
   "apiVersion": {"type": "string"}, "kind": {"type": "string"}, "metadata": {"type": "object"},
   "spec": {"type": "object", "properties": {
    "plain": {"type": "array", "items": {"type": "object", "properties": {"name": {"type": "string"}, "value": {"type": "string"}}}},
    "tags": {"type": "array", "x-kubernetes-list-type": "set", "items": {"type": "string"}},
    "ports": {"type": "array", "x-kubernetes-list-type": "set", "items": {"type": "integer"}},
    "routes": {"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["host", "port"],
     "items": {"type": "object", "properties": {"host": {"type": "string"}, "port": {"type": "integer", "default": 80}, "backend": {"type": "string"}}}},
    "byID": {"type": "array", "x-kubernetes-patch-strategy": "merge", "x-kubernetes-patch-merge-key": "id",
     "items": {"type": "object", "properties": {"id": {"type": "string"}, "v": {"type": "string"}}}},
    "nullable": {"type": "array", "nullable": true, "items": {"type": "string"}},
    "free": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}
   }}
  }
 }
}`

func widgetSchema(t testing.TB) *Schema {
	t.Helper()
	var models map[string]*openapispec.Schema
	if err := json.Unmarshal([]byte(widgetModels), &models); err != nil {
		t.Fatal(err)
	}
	tc, err := managedfields.NewTypeConverter(models, false)
	if err != nil {
		t.Fatal(err)
	}
	s := SchemaFrom(tc, schema.GroupVersionKind{Group: "example.com", Version: "v1", Kind: "Widget"})
	if s == nil {
		t.Fatal("no schema for Widget")
	}
	return s
}

// mounts is a Deployment whose container mounts one volume twice, at two
// subPaths: volumeMounts are keyed by mountPath, not by name.
const mounts = `
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: shop}
spec:
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers:
      - name: web
        image: nginx:1.27
        args: [--a, --b]
        env: [{name: A, value: "1"}, {name: B, value: "2"}]
        ports: [{containerPort: 80}, {containerPort: 53, protocol: UDP}]
        volumeMounts:
        - {name: config, mountPath: /etc/app/a.conf, subPath: a.conf}
        - {name: config, mountPath: /etc/app/b.conf, subPath: b.conf}
      tolerations: [{key: a, operator: Exists}, {key: b, operator: Exists}]
      volumes: [{name: config, configMap: {name: cfg}}]
`

func TestCompareLists(t *testing.T) {
	widget := widgetSchema(t)
	container := func(m map[string]any) map[string]any {
		return spec(m)["containers"].([]any)[0].(map[string]any)
	}
	list := func(m map[string]any, field string) []any { return container(m)[field].([]any) }
	el := func(m map[string]any, field string, i int) map[string]any { return list(m, field)[i].(map[string]any) }
	const w = `{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"w"},"spec":{
		"plain":[{"name":"a","value":"1"},{"name":"b","value":"2"}],"tags":["x","y"],"ports":[80,443],
		"routes":[{"host":"a","backend":"one"},{"host":"a","port":8080,"backend":"two"}],
		"byID":[{"id":"p","v":"1"},{"id":"q","v":"2"}],"free":{"list":[{"name":"n","v":1},{"name":"m","v":2}]}}}`
	wspec := func(m map[string]any) map[string]any { return m["spec"].(map[string]any) }
	tests := []struct {
		name    string
		desired string
		schema  *Schema // nil: the built-in one of desired's kind
		edit    func(live map[string]any)
		want    []string
	}{
		// Map lists keyed by one field (volumeMounts by mountPath).
		{name: "mounts of one volume, identical", desired: mounts},
		{name: "mounts: the first one changed", desired: mounts, edit: func(l map[string]any) {
			el(l, "volumeMounts", 0)["subPath"] = "evil.conf"
		}, want: []string{"/spec/template/spec/containers/0/volumeMounts/0/subPath"}},
		{name: "mounts: the last one changed", desired: mounts, edit: func(l map[string]any) {
			el(l, "volumeMounts", 1)["readOnly"] = true // not Git's: no drift
			el(l, "volumeMounts", 1)["subPath"] = "evil.conf"
		}, want: []string{"/spec/template/spec/containers/0/volumeMounts/1/subPath"}},
		{name: "mounts: reordered", desired: mounts, edit: func(l map[string]any) {
			m := list(l, "volumeMounts")
			m[0], m[1] = m[1], m[0]
		}},
		{name: "mounts: one more of the same volume is someone else's", desired: mounts, edit: func(l map[string]any) {
			container(l)["volumeMounts"] = append(list(l, "volumeMounts"), map[string]any{"name": "config", "mountPath": "/x", "subPath": "x"})
		}},
		{name: "mounts: the first one moved", desired: mounts, edit: func(l map[string]any) {
			el(l, "volumeMounts", 0)["mountPath"] = "/etc/evil"
		}, want: []string{"/spec/template/spec/containers/0/volumeMounts/0"}},
		{name: "mounts: a mount path twice in the cluster", desired: mounts, edit: func(l map[string]any) {
			container(l)["volumeMounts"] = append(list(l, "volumeMounts"), map[string]any{"name": "other", "mountPath": "/etc/app/a.conf"})
		}, want: []string{"/spec/template/spec/containers/0/volumeMounts/0"}},
		// Map lists keyed by several fields, a key taking its default.
		{name: "ports: protocol defaulted", desired: mounts, edit: func(l map[string]any) {
			el(l, "ports", 0)["protocol"] = "TCP"
		}},
		{name: "ports: protocol changed is another port", desired: mounts, edit: func(l map[string]any) {
			el(l, "ports", 0)["protocol"] = "SCTP"
		}, want: []string{"/spec/template/spec/containers/0/ports/0"}},
		{name: "ports: reordered", desired: mounts, edit: func(l map[string]any) {
			p := list(l, "ports")
			p[0], p[1] = p[1], p[0]
		}},
		// Repeated keys: env names may repeat in a stored object.
		{name: "env: a name twice in the cluster", desired: mounts, edit: func(l map[string]any) {
			container(l)["env"] = append(list(l, "env"), map[string]any{"name": "A", "value": "evil"})
		}, want: []string{"/spec/template/spec/containers/0/env/0"}},
		{name: "env: repeated in Git and in the cluster alike", desired: strings.Replace(mounts, `{name: B, value: "2"}`, `{name: A, value: "2"}`, 1)},
		{name: "env: repeated in Git, the second changed", desired: strings.Replace(mounts, `{name: B, value: "2"}`, `{name: A, value: "2"}`, 1),
			edit: func(l map[string]any) { el(l, "env", 1)["value"] = "3" },
			want: []string{"/spec/template/spec/containers/0/env/1/value"}},
		{name: "env: repeated in Git, once in the cluster", desired: strings.Replace(mounts, `{name: B, value: "2"}`, `{name: A, value: "2"}`, 1),
			edit: func(l map[string]any) { container(l)["env"] = list(l, "env")[:1] },
			want: []string{"/spec/template/spec/containers/0/env/0"}},
		// Atomic lists: in place, whole.
		{name: "args reordered", desired: mounts, edit: func(l map[string]any) {
			a := list(l, "args")
			a[0], a[1] = a[1], a[0]
		}, want: []string{"/spec/template/spec/containers/0/args/0", "/spec/template/spec/containers/0/args/1"}},
		{name: "tolerations (atomic objects) reordered", desired: mounts, edit: func(l map[string]any) {
			tl := spec(l)["tolerations"].([]any)
			tl[0], tl[1] = tl[1], tl[0]
		}, want: []string{"/spec/template/spec/tolerations/0/key", "/spec/template/spec/tolerations/1/key"}},
		{name: "tolerations one more", desired: mounts, edit: func(l map[string]any) {
			spec(l)["tolerations"] = append(spec(l)["tolerations"].([]any), map[string]any{"key": "c"})
		}, want: []string{"/spec/template/spec/tolerations"}},
		// A custom resource's lists, from its schema.
		{name: "widget identical", desired: w, schema: widget},
		{name: "widget: atomic list reordered", desired: w, schema: widget, edit: func(l map[string]any) {
			p := wspec(l)["plain"].([]any)
			p[0], p[1] = p[1], p[0]
		}, want: []string{"/spec/plain/0/name", "/spec/plain/0/value", "/spec/plain/1/name", "/spec/plain/1/value"}},
		{name: "widget: set reordered, one added", desired: w, schema: widget, edit: func(l map[string]any) {
			wspec(l)["tags"] = []any{"z", "y", "x"}
			wspec(l)["ports"] = []any{float64(443), int64(80)}
		}},
		{name: "widget: set member gone", desired: w, schema: widget, edit: func(l map[string]any) {
			wspec(l)["tags"] = []any{"y"}
			wspec(l)["ports"] = []any{int64(80), int64(8443)}
		}, want: []string{"/spec/ports/1", "/spec/tags/0"}},
		{name: "widget: set member twice", desired: w, schema: widget, edit: func(l map[string]any) {
			wspec(l)["tags"] = []any{"x", "y", "x"}
		}, want: []string{"/spec/tags/0"}},
		{name: "widget: two-key map list with a defaulted key", desired: w, schema: widget, edit: func(l map[string]any) {
			r := wspec(l)["routes"].([]any)
			r[0].(map[string]any)["port"] = int64(80)
			r[0], r[1] = r[1], r[0]
		}},
		{name: "widget: same host, other port is another element", desired: w, schema: widget, edit: func(l map[string]any) {
			wspec(l)["routes"].([]any)[0].(map[string]any)["port"] = int64(81)
		}, want: []string{"/spec/routes/0"}},
		{name: "widget: map list value changed", desired: w, schema: widget, edit: func(l map[string]any) {
			wspec(l)["routes"].([]any)[1].(map[string]any)["backend"] = "evil"
		}, want: []string{"/spec/routes/1/backend"}},
		{name: "widget: patch merge key list by key", desired: w, schema: widget, edit: func(l map[string]any) {
			b := wspec(l)["byID"].([]any)
			b[0], b[1] = b[1], b[0]
			b[0].(map[string]any)["v"] = "evil" // q
		}, want: []string{"/spec/byID/1/v"}},
		{name: "widget: lists without a schema (preserved unknown fields) are atomic", desired: w, schema: widget, edit: func(l map[string]any) {
			f := wspec(l)["free"].(map[string]any)["list"].([]any)
			f[0], f[1] = f[1], f[0]
		}, want: []string{"/spec/free/list/0/name", "/spec/free/list/0/v", "/spec/free/list/1/name", "/spec/free/list/1/v"}},
		// No schema at all: objects with distinct names by name, else atomic.
		{name: "no schema: distinct names by name", desired: `{"kind":"X","spec":{"l":[{"name":"a","v":1},{"name":"b","v":2}]}}`, edit: func(l map[string]any) {
			x := l["spec"].(map[string]any)["l"].([]any)
			x[0], x[1] = x[1], x[0]
		}},
		{name: "no schema: repeated names are atomic", desired: `{"kind":"X","spec":{"l":[{"name":"a","p":"/1"},{"name":"a","p":"/2"}]}}`, edit: func(l map[string]any) {
			l["spec"].(map[string]any)["l"].([]any)[0].(map[string]any)["p"] = "/evil"
		}, want: []string{"/spec/l/0/p"}},
		{name: "no schema: a name repeated live matches either", desired: `{"kind":"X","spec":{"l":[{"name":"a","p":"/2"}]}}`, edit: func(l map[string]any) {
			l["spec"].(map[string]any)["l"] = []any{map[string]any{"name": "a", "p": "/1"}, map[string]any{"name": "a", "p": "/2"}}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d, l := obj(t, tt.desired), obj(t, tt.desired)
			if tt.edit != nil {
				tt.edit(l)
			}
			got := Paths(Compare(d, l, Options{Schema: tt.schema}))
			if len(got) == 0 {
				got = nil
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("Compare paths = %v, want %v", got, tt.want)
			}
		})
	}
}

// TestCompareNull: a live null is what the API server stores for Git's empty
// list, map or string in a built-in kind (a Role's rules: [] reads back as
// null, a Secret's or ConfigMap's null value as ""); in a custom resource a
// null survives only in a nullable field, where applying [] stores [].
func TestCompareNull(t *testing.T) {
	widget := widgetSchema(t)
	tests := []struct {
		name          string
		desired, live string
		schema        *Schema
		want          []string
	}{
		{name: "role rules [] against null", desired: `{"apiVersion":"rbac.authorization.k8s.io/v1","kind":"Role","metadata":{"name":"r"},"rules":[]}`,
			live: `{"apiVersion":"rbac.authorization.k8s.io/v1","kind":"Role","metadata":{"name":"r"},"rules":null}`},
		{name: "secret value empty against null", desired: `{"apiVersion":"v1","kind":"Secret","metadata":{"name":"s"},"data":{"k":""}}`,
			live: `{"apiVersion":"v1","kind":"Secret","metadata":{"name":"s"},"data":{"k":null}}`},
		{name: "secret stringData empty against null", desired: `{"apiVersion":"v1","kind":"Secret","metadata":{"name":"s"},"stringData":{"k":""}}`,
			live: `{"apiVersion":"v1","kind":"Secret","metadata":{"name":"s"},"data":{"k":null}}`},
		{name: "secret value set against null", desired: `{"apiVersion":"v1","kind":"Secret","metadata":{"name":"s"},"data":{"k":"eA=="}}`,
			live: `{"apiVersion":"v1","kind":"Secret","metadata":{"name":"s"},"data":{"k":null}}`, want: []string{"/data/k"}},
		{name: "configmap value empty against null", desired: `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c"},"data":{"k":""}}`,
			live: `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c"},"data":{"k":null}}`},
		{name: "empty map against null", desired: `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c"},"data":{}}`,
			live: `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c"},"data":null}`},
		{name: "zero number against null is drift", desired: `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"d"},"spec":{"replicas":0}}`,
			live: `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"d"},"spec":{"replicas":null}}`, want: []string{"/spec/replicas"}},
		{name: "custom resource: nullable [] against null is drift", schema: widget,
			desired: `{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"w"},"spec":{"nullable":[]}}`,
			live:    `{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"w"},"spec":{"nullable":null}}`, want: []string{"/spec/nullable"}},
		{name: "absent is not null", desired: `{"apiVersion":"rbac.authorization.k8s.io/v1","kind":"Role","metadata":{"name":"r"},"rules":[]}`,
			live: `{"apiVersion":"rbac.authorization.k8s.io/v1","kind":"Role","metadata":{"name":"r"}}`, want: []string{"/rules"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Paths(Compare(obj(t, tt.desired), obj(t, tt.live), Options{Schema: tt.schema}))
			if len(got) == 0 {
				got = nil
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("Compare paths = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestCompareClusterScopedNamespace(t *testing.T) {
	d := obj(t, `{"apiVersion":"rbac.authorization.k8s.io/v1","kind":"ClusterRole","metadata":{"name":"r","namespace":"shop"},"rules":[]}`)
	l := obj(t, `{"apiVersion":"rbac.authorization.k8s.io/v1","kind":"ClusterRole","metadata":{"name":"r"},"rules":null}`)
	if got := Compare(d, l, Options{}); len(got) != 0 {
		t.Fatalf("a namespace Git gives a cluster-scoped object is drift: %v", got)
	}
}

func TestEditsLists(t *testing.T) {
	tests := []struct {
		name string
		edit func(m map[string]any)
		want []string
	}{
		{name: "first of two mounts of one volume changed", edit: func(m map[string]any) {
			spec(m)["containers"].([]any)[0].(map[string]any)["volumeMounts"].([]any)[0].(map[string]any)["subPath"] = "evil"
		}, want: []string{"/spec/template/spec/containers/0/volumeMounts/0/subPath changed a.conf→evil (a.conf)"}},
		{name: "mounts reordered", edit: func(m map[string]any) {
			v := spec(m)["containers"].([]any)[0].(map[string]any)["volumeMounts"].([]any)
			v[0], v[1] = v[1], v[0]
		}},
		{name: "env name added twice", edit: func(m map[string]any) {
			c := spec(m)["containers"].([]any)[0].(map[string]any)
			c["env"] = append(c["env"].([]any), map[string]any{"name": "A", "value": "x"})
		}, want: []string{"/spec/template/spec/containers/0/env/2 added <nil>→map[name:A value:x] (<nil>)"}},
		{name: "toleration order is an edit", edit: func(m map[string]any) {
			tl := spec(m)["tolerations"].([]any)
			tl[0], tl[1] = tl[1], tl[0]
		}, want: []string{"/spec/template/spec/tolerations/0/key changed a→b (a)", "/spec/template/spec/tolerations/1/key changed b→a (b)"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			old, updated := obj(t, mounts), obj(t, mounts)
			tt.edit(updated)
			var got []string
			for _, c := range Edits(old, updated, obj(t, mounts), Options{}) {
				op := "changed"
				if c.Added {
					op = "added"
				} else if c.Missing {
					op = "removed"
				}
				got = append(got, strings.Join([]string{c.Path, op, show(c.Old) + "→" + show(c.Live), "(" + show(c.Desired) + ")"}, " "))
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("Edits:\n got %q\nwant %q", got, tt.want)
			}
		})
	}
}

func TestWithoutIgnoredLists(t *testing.T) {
	rules, err := CompileRules([]RuleSpec{{JSONPointers: []string{
		"/spec/template/spec/containers/0/volumeMounts/0", // a map list element: that one only
		"/spec/template/spec/containers/0/args/1",         // an atomic list: the whole list
	}}})
	if err != nil {
		t.Fatal(err)
	}
	d := obj(t, mounts)
	out := WithoutIgnored(d, For(rules, "apps", "Deployment", "shop", "web", nil))
	c := spec(out)["containers"].([]any)[0].(map[string]any)
	if _, ok := c["args"]; ok {
		t.Errorf("atomic args with a hidden element kept: %v", c["args"])
	}
	vm := c["volumeMounts"].([]any)
	if len(vm) != 1 || vm[0].(map[string]any)["mountPath"] != "/etc/app/b.conf" {
		t.Errorf("volumeMounts = %v, want only /etc/app/b.conf", vm)
	}
}

func BenchmarkCompareDeploymentMounts(b *testing.B) {
	d, l := obj(b, mounts), obj(b, mounts)
	b.ReportAllocs()
	for b.Loop() {
		if len(Compare(d, l, Options{})) != 0 {
			b.Fatal("unexpected drift")
		}
	}
}

// TestCompareLongLists: lists longer than smallList are matched through an
// index of encoded keys, with the same answers.
func TestCompareLongLists(t *testing.T) {
	long := func(n int, rev bool) []any {
		out := make([]any, n)
		for i := range n {
			j := i
			if rev {
				j = n - 1 - i
			}
			out[i] = map[string]any{"containerPort": int64(1000 + j), "name": fmt.Sprintf("p%d", j)}
		}
		return out
	}
	for _, n := range []int{smallList, smallList + 5} {
		for _, tt := range []struct {
			name string
			edit func(ports []any) []any
			want []string
		}{
			{name: "reordered", edit: func(p []any) []any { return p }},
			{name: "one changed", edit: func(p []any) []any {
				p[0].(map[string]any)["name"] = "evil" // the last of Git's
				return p
			}, want: []string{fmt.Sprintf("/spec/template/spec/containers/0/ports/%d/name", n-1)}},
			{name: "one repeated", edit: func(p []any) []any {
				return append(p, map[string]any{"containerPort": int64(1000), "protocol": "TCP", "name": "again"})
			}, want: []string{"/spec/template/spec/containers/0/ports/0"}},
		} {
			t.Run(fmt.Sprintf("%d %s", n, tt.name), func(t *testing.T) {
				d, l := obj(t, mounts), obj(t, mounts)
				spec(d)["containers"].([]any)[0].(map[string]any)["ports"] = long(n, false)
				spec(l)["containers"].([]any)[0].(map[string]any)["ports"] = tt.edit(long(n, true))
				got := Paths(Compare(d, l, Options{}))
				if len(got) == 0 {
					got = nil
				}
				if !reflect.DeepEqual(got, tt.want) {
					t.Fatalf("Compare paths = %v, want %v", got, tt.want)
				}
				ed := Paths(Edits(d, l, d, Options{}))
				if len(tt.want) == 0 && len(ed) != 0 {
					t.Fatalf("Edits of a reordered map list: %v", ed)
				}
			})
		}
	}
}

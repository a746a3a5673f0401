package render

import (
	"errors"
	"strings"
	"testing"
	"testing/fstest"
)

// placed is an expected object: its key string, file and line.
type placed struct {
	key  string
	path string
	line int
}

func files(kv ...string) fstest.MapFS {
	m := fstest.MapFS{}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i]] = &fstest.MapFile{Data: []byte(kv[i+1])}
	}
	return m
}

const multiDoc = `# leading comment
apiVersion: v1
kind: Namespace
metadata:
  name: shop
---
# a comment before the object
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  namespace: shop
spec:
  replicas: 3
---
---
# only a comment
---
apiVersion: v1
kind: ConfigMap
metadata: {name: cfg, namespace: shop}
data: {ratio: "0.5"}
`

const list = `apiVersion: v1
kind: List
items:
- apiVersion: v1
  kind: ConfigMap
  metadata:
    name: a
- apiVersion: v1
  kind: ConfigMap
  metadata:
    name: b
`

const jsonFile = `{
	"apiVersion": "v1",
	"kind": "ServiceList",
	"items": [
		{"apiVersion": "v1", "kind": "Service", "metadata": {"name": "web", "namespace": "shop"}, "spec": {"ports": [{"port": 80}]}},
		{"apiVersion": "v1", "kind": "Service",
		 "metadata": {"name": "a\/b", "namespace": "shop"}}
	]
}
`

func TestRender(t *testing.T) {
	tests := []struct {
		name string
		fsys fstest.MapFS
		dir  string
		want []placed
	}{
		{
			name: "multi-document YAML with comments and empty documents",
			fsys: files("apps/all.yaml", multiDoc),
			want: []placed{
				{"/Namespace//shop", "apps/all.yaml", 2},
				{"apps/Deployment/shop/web", "apps/all.yaml", 8},
				{"/ConfigMap/shop/cfg", "apps/all.yaml", 19},
			},
		},
		{
			name: "List expands to its items with their own lines",
			fsys: files("list.yml", list),
			want: []placed{
				{"/ConfigMap//a", "list.yml", 4},
				{"/ConfigMap//b", "list.yml", 8},
			},
		},
		{
			name: "JSON List",
			fsys: files("svc.json", jsonFile),
			want: []placed{
				{"/Service/shop/web", "svc.json", 5},
				{"/Service/shop/a/b", "svc.json", 6},
			},
		},
		{
			name: "non-manifest and hidden files ignored, files sorted by path",
			fsys: files(
				"b.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: b}\n",
				"a/z.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: az}\n",
				"a.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n",
				"README.md", "not: [yaml",
				"kustomization.txt", "x",
				".github/workflows/ci.yml", "on: push\n",
				"empty.yaml", "",
				"comments.yaml", "# nothing\n---\n# here\n",
			),
			dir: ".",
			want: []placed{
				{"/ConfigMap//a", "a.yaml", 1},
				{"/ConfigMap//az", "a/z.yaml", 1},
				{"/ConfigMap//b", "b.yaml", 1},
			},
		},
		{
			name: "subfolder",
			fsys: files(
				"apps/web/cm.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: web}\n",
				"other/cm.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: other}\n",
			),
			dir:  "/apps/",
			want: []placed{{"/ConfigMap//web", "apps/web/cm.yaml", 1}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			src := Source{URL: "http://git/x.git", Revision: "abc", Path: "ignored", Line: 99}
			objs, err := Render(tt.fsys, tt.dir, src)
			if err != nil {
				t.Fatalf("Render: %v", err)
			}
			var got []placed
			for _, o := range objs {
				got = append(got, placed{o.Key.String(), o.Source.Path, o.Source.Line})
				if o.Source.URL != src.URL || o.Source.Revision != src.Revision {
					t.Errorf("%s: source %+v does not carry URL and revision", o.Key, o.Source)
				}
				if KeyOf(o.Obj()) != o.Key {
					t.Errorf("%s: KeyOf(Obj) = %s", o.Key, KeyOf(o.Obj()))
				}
			}
			if len(got) != len(tt.want) {
				t.Fatalf("got %v, want %v", got, tt.want)
			}
			for i := range got {
				if got[i] != tt.want[i] {
					t.Errorf("object %d = %v, want %v", i, got[i], tt.want[i])
				}
			}
		})
	}
}

func TestRenderValues(t *testing.T) {
	fsys := files("v.yaml", `apiVersion: v1
kind: ConfigMap
metadata:
  name: v
  labels: &l {a: "1"}
  annotations:
    <<: *l
    b: "2"
spec:
  int: 3
  hex: 0x10
  float: 1.5
  bool: true
  nothing: ~
  str: "007"
  date: 2024-01-02
  list: [1, two]
`, "j.json", `{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "j"}, "n": 3, "f": 2.5, "e": 1e3}`)
	objs, err := Render(fsys, "", Source{})
	if err != nil {
		t.Fatal(err)
	}
	j, v := objs[0].Obj().Object, objs[1].Obj().Object
	checks := []struct {
		name      string
		got, want any
	}{
		{"json int", j["n"], int64(3)},
		{"json float", j["f"], 2.5},
		{"json exponent", j["e"], 1000.0},
		{"int", v["spec"].(map[string]any)["int"], int64(3)},
		{"hex", v["spec"].(map[string]any)["hex"], int64(16)},
		{"float", v["spec"].(map[string]any)["float"], 1.5},
		{"bool", v["spec"].(map[string]any)["bool"], true},
		{"null", v["spec"].(map[string]any)["nothing"], nil},
		{"quoted", v["spec"].(map[string]any)["str"], "007"},
		{"timestamp kept as text", v["spec"].(map[string]any)["date"], "2024-01-02"},
		{"list int", v["spec"].(map[string]any)["list"].([]any)[0], int64(1)},
		{"merge", objs[1].Obj().GetAnnotations()["a"], "1"},
		{"merge keeps explicit", objs[1].Obj().GetAnnotations()["b"], "2"},
		{"alias", objs[1].Obj().GetLabels()["a"], "1"},
	}
	for _, c := range checks {
		if c.got != c.want {
			t.Errorf("%s = %#v, want %#v", c.name, c.got, c.want)
		}
	}
}

func TestRenderErrors(t *testing.T) {
	cm := "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cfg\n"
	tests := []struct {
		name     string
		fsys     fstest.MapFS
		dir      string
		wantPath string
		wantLine int
		wantMsg  string
	}{
		{"broken second document", files("apps/web/deploy.yaml", cm+"---\n"+cm+"  labels: [a\n"), "", "apps/web/deploy.yaml", 10, "apps/web/deploy.yaml:10: "},
		{"bad indentation", files("a.yaml", cm+"---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\n   bad: 1\n"), "", "a.yaml", 10, "mapping values are not allowed"},
		{"missing kind", files("a.yaml", cm+"---\n\napiVersion: v1\nmetadata: {name: x}\n"), "", "a.yaml", 7, "lacks kind"},
		{"missing name", files("a.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {}\n"), "", "a.yaml", 1, "lacks metadata.name"},
		{"missing everything", files("a.yaml", "foo: bar\n"), "", "a.yaml", 1, "lacks apiVersion, kind, metadata.name"},
		{"scalar document", files("a.yaml", "just text\n"), "", "a.yaml", 1, "not an object"},
		{"list item without name", files("l.yaml", list+"- apiVersion: v1\n  kind: ConfigMap\n"), "", "l.yaml", 12, "lacks metadata.name"},
		{"non-string key", files("a.yaml", cm+"data:\n  1: one\n"), "", "a.yaml", 6, `map key "1" is not a string`},
		{"duplicate map key", files("a.yaml", cm+"kind: Secret\n"), "", "a.yaml", 5, `duplicate map key "kind"`},
		{"bad JSON", files("a.json", "{\n\"apiVersion\": \"v1\",\n\"kind\": \n}\n"), "", "a.json", 4, "invalid character"},
		{"truncated JSON", files("a.json", "{\n\"apiVersion\": \"v1\"\n"), "", "a.json", 2, "unexpected end"},
		{"JSON duplicate key", files("a.json", "{\"apiVersion\": \"v1\",\n \"apiVersion\": \"v2\"}"), "", "a.json", 2, "duplicate map key"},
		{"unclosed flow mapping", files("a.yaml", cm+"---\nkind: x\nb: {c: 1\nd: 2\n"), "", "a.yaml", 7, "did not find expected ',' or '}'"},
		{"unknown anchor", files("a.yaml", cm+"data:\n  x: *nope\n"), "", "a.yaml", 6, `unknown anchor "nope"`},
		{"infinite float", files("a.yaml", cm+"x: .inf\n"), "", "a.yaml", 5, "no JSON form"},
		{"missing path", files("a.yaml", cm), "apps/nope", "apps/nope", 0, "apps/nope: path not found"},
		{"duplicate object", files("a.yaml", cm, "b/c.yaml", "# x\n"+cm), "", "b/c.yaml", 2, "duplicate object /ConfigMap//cfg, first defined at a.yaml:1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			objs, err := Render(tt.fsys, tt.dir, Source{})
			if err == nil {
				_, err = NewSnapshot("u", "r", objs)
			}
			var re *RenderError
			if !errors.As(err, &re) {
				t.Fatalf("err = %v (%T), want *RenderError", err, err)
			}
			if re.Path != tt.wantPath || re.Line != tt.wantLine {
				t.Errorf("at %s:%d, want %s:%d (%v)", re.Path, re.Line, tt.wantPath, tt.wantLine, err)
			}
			if !strings.Contains(err.Error(), tt.wantMsg) {
				t.Errorf("err = %q, want containing %q", err, tt.wantMsg)
			}
		})
	}
}

// An object may name only metadata.generateName (a hook the guard creates);
// its key holds the prefix, so two such objects of one prefix collide.
func TestRenderGenerateName(t *testing.T) {
	job := "apiVersion: batch/v1\nkind: Job\nmetadata:\n  generateName: migrate-\n  namespace: shop\n"
	tests := []struct {
		name    string
		fsys    fstest.MapFS
		wantKey string
		wantErr string
	}{
		{"generateName alone", files("a.yaml", job), "batch/Job/shop/migrate-", ""},
		{"name and generateName: the name", files("a.yaml", job+"  name: migrate\n"), "batch/Job/shop/migrate", ""},
		{"the same prefix twice", files("a.yaml", job+"---\n"+job), "", "duplicate object batch/Job/shop/migrate-"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			objs, err := Render(tt.fsys, "", Source{})
			if err == nil {
				_, err = NewSnapshot("u", "r", objs)
			}
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(objs) != 1 || objs[0].Key.String() != tt.wantKey {
				t.Fatalf("objects %v, want one keyed %s", objs, tt.wantKey)
			}
		})
	}
}

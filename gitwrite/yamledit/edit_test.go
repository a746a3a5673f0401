package yamledit

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden files of TestEdit")

var (
	deployment = Target{Line: 8, Kind: "Deployment", Name: "web"}
	configMap  = Target{Line: 43, Kind: "ConfigMap", Name: "cfg"}
	api        = Target{Line: 1, Kind: "Deployment", Name: "api"}
)

func set(p string, v any) Op { return Op{Pointer: p, Value: v} }
func del(p string) Op        { return Op{Pointer: p, Delete: true} }

// TestEdit edits real files; the result of each case is its golden file in
// testdata (go test -update rewrites them; review the diff).
func TestEdit(t *testing.T) {
	tests := []struct {
		name   string
		file   string
		target Target
		ops    []Op
	}{
		{"replicas", "shop.yaml", deployment, []Op{set("/spec/replicas", int64(8))}},
		{"quoted-image", "shop.yaml", deployment, []Op{set("/spec/template/spec/containers/0/image", "nginx:1.28")}},
		{"env-by-index", "shop.yaml", deployment, []Op{set("/spec/template/spec/containers/0/env/1/value", "true")}},
		{"flow-map", "shop.yaml", deployment, []Op{set("/spec/template/spec/containers/0/resources/limits/cpu", "1")}},
		{"flow-list", "shop.yaml", deployment, []Op{set("/spec/template/spec/containers/0/args", []any{"--port", "9090", "--verbose"})}},
		{"delete-list-element", "shop.yaml", deployment, []Op{del("/spec/template/spec/containers/0/env/1")}},
		{"delete-first-element", "shop.yaml", deployment, []Op{del("/spec/template/spec/containers/0/env/0")}},
		{"delete-every-element", "shop.yaml", deployment, []Op{del("/spec/template/spec/containers/0/env/0"), del("/spec/template/spec/containers/0/env/1")}},
		{"delete-key", "shop.yaml", deployment, []Op{del("/metadata/labels/app")}},
		{"delete-only-key", "shop.yaml", deployment, []Op{del("/metadata/annotations/team")}},
		{"delete-first-key-of-element", "shop.yaml", deployment, []Op{del("/spec/template/spec/containers/1/name")}},
		{"delete-container", "shop.yaml", deployment, []Op{del("/spec/template/spec/containers/1")}},
		{"add-field", "shop.yaml", deployment, []Op{set("/spec/paused", true), set("/spec/strategy/type", "Recreate")}},
		{"block-map-replaced", "shop.yaml", deployment, []Op{set("/metadata/labels", map[string]any{"app": "web", "tier": "back", "zone": "a"})}},
		{"scalar-becomes-list", "shop.yaml", deployment, []Op{set("/spec/replicas", []any{int64(1), int64(2)})}},
		{"many", "shop.yaml", deployment, []Op{
			set("/spec/replicas", int64(5)),
			set("/spec/template/spec/containers/0/image", "nginx:1.29"),
			set("/spec/template/spec/containers/1/image", "envoy:1.31"),
			del("/spec/template/spec/containers/0/env/0"),
			set("/metadata/annotations/team", "sre"),
		}},
		{"literal-block", "shop.yaml", configMap, []Op{set("/data/nginx.conf", "server {\n  listen 9090;\n}\n")}},
		{"folded-to-plain", "shop.yaml", configMap, []Op{set("/data/motd", "closed")}},
		{"string-becomes-multiline", "shop.yaml", configMap, []Op{set("/data/greeting", "hello\nworld")}},
		{"long-string", "shop.yaml", configMap, []Op{set("/data/greeting", strings.Repeat("a long greeting ", 8))}},
		{"found-by-identity", "shop.yaml", Target{Line: 3, Kind: "ConfigMap", Name: "cfg"}, []Op{set("/data/greeting", "hi")}},
		{"alias-copied", "anchors.yaml", api, []Op{set("/spec/template/metadata/labels/app", "api-v2")}},
		{"alias-list-copied", "anchors.yaml", api, []Op{set("/spec/template/spec/containers/1/env/0/value", "debug")}},
		{"merge-key-overridden", "anchors.yaml", api, []Op{set("/spec/template/spec/containers/1/image", "worker:2")}},
		{"list-item", "list.yaml", Target{Line: 9, Kind: "ConfigMap", Name: "two"}, []Op{set("/data/a", "3"), del("/data/b")}},
		{"crlf", "crlf.yaml", Target{Line: 1}, []Op{set("/data/a", "2"), set("/data/c", "new")}},
		{"flow-document", "flow.yaml", Target{Line: 1}, []Op{set("/data/a", "2")}},
		{"edge-scalars", "edge.yaml", Target{Line: 1}, []Op{set("/metadata/annotations/empty", "now"), set("/metadata/annotations/kept", "new"), set("/metadata/annotations/tagged", "6")}},
		{"edge-block-lists", "edge.yaml", Target{Line: 1}, []Op{
			set("/spec/containers/0/command", []any{"sh", "-c", "echo hi"}),
			set("/spec/containers/0/ports", []any{map[string]any{"containerPort": int64(80)}, map[string]any{"containerPort": int64(443), "name": "tls"}}),
			set("/spec/tolerations", []any{map[string]any{"key": "b", "operator": "Equal", "value": "x"}}),
		}},
		{"json", "cm.json", Target{Line: 1}, []Op{set("/data/greeting", "hi"), del("/data/x"), set("/metadata/labels/tier", "front")}},
		{"json-tabs", "tabs.json", Target{Line: 1}, []Op{set("/data/a", "2")}},
		{"json-one-line", "oneline.json", Target{Line: 1}, []Op{set("/data/b", int64(2))}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			in, err := os.ReadFile(filepath.Join("testdata", tc.file))
			if err != nil {
				t.Fatal(err)
			}
			got, err := Edit(tc.file, in, tc.target, tc.ops)
			if err != nil {
				t.Fatalf("Edit: %v", err)
			}
			golden := filepath.Join("testdata", "golden", tc.name+filepath.Ext(tc.file))
			if *update {
				if err := os.MkdirAll(filepath.Dir(golden), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(golden, got, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run go test -update and review the golden file)", err)
			}
			if string(got) != string(want) {
				t.Fatalf("Edit of %s:\n--- got\n%s\n--- want (%s)\n%s", tc.file, got, golden, want)
			}
		})
	}
}

// TestEditKeepsUntouchedLines checks, for one edit, that every line but the
// changed one is byte for byte the same: comments, quotes, blank lines.
func TestEditKeepsUntouchedLines(t *testing.T) {
	in, err := os.ReadFile(filepath.Join("testdata", "shop.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	got, err := Edit("shop.yaml", in, deployment, []Op{set("/spec/template/spec/containers/1/image", "envoy:1.31")})
	if err != nil {
		t.Fatal(err)
	}
	a, b := strings.Split(string(in), "\n"), strings.Split(string(got), "\n")
	if len(a) != len(b) {
		t.Fatalf("line count changed from %d to %d:\n%s", len(a), len(b), got)
	}
	changed := 0
	for i := range a {
		if a[i] != b[i] {
			changed++
			if b[i] != "        image: envoy:1.31" {
				t.Errorf("line %d: %q became %q", i+1, a[i], b[i])
			}
		}
	}
	if changed != 1 {
		t.Fatalf("%d lines changed, want 1", changed)
	}
}

func TestEditErrors(t *testing.T) {
	tests := []struct {
		name    string
		file    string
		target  Target
		ops     []Op
		wantErr string
	}{
		{"shared anchor", "anchors.yaml", api, []Op{set("/metadata/labels/app", "x")}, "anchor &labels"},
		{"merged-from container", "anchors.yaml", api, []Op{set("/spec/template/spec/containers/0/image", "api:2")}, "anchor &api"},
		{"inside a scalar", "shop.yaml", deployment, []Op{set("/spec/replicas/x", int64(1))}, `"x" is inside a number at line 20`},
		{"index out of range", "shop.yaml", deployment, []Op{set("/spec/template/spec/containers/5/image", "x")}, "index 5 is out of range: the list has 2 elements"},
		{"not an index", "shop.yaml", deployment, []Op{set("/spec/template/spec/containers/web/image", "x")}, `"web" is not a list index`},
		{"delete missing", "shop.yaml", deployment, []Op{del("/spec/nothing")}, `no field "nothing"`},
		{"no object at line", "shop.yaml", Target{Line: 2}, []Op{set("/a", "b")}, "no object starts at line 2"},
		{"other object at line", "shop.yaml", Target{Line: 8, Kind: "Service", Name: "web"}, []Op{set("/a", "b")}, "no object Service web (line 8) in the file (line 8 holds Deployment web)"},
		{"unknown object", "shop.yaml", Target{Kind: "Service", Name: "web"}, []Op{set("/a", "b")}, "no object Service web"},
		{"overlap", "shop.yaml", deployment, []Op{set("/spec", map[string]any{}), set("/spec/replicas", int64(1))}, "overlap"},
		{"bad pointer", "shop.yaml", deployment, []Op{set("spec", int64(1))}, `a JSON pointer starts with "/"`},
		{"whole object", "shop.yaml", deployment, []Op{set("", int64(1))}, "the whole object"},
		{"every field", "shop.yaml", Target{Line: 3}, []Op{del("/apiVersion"), del("/kind"), del("/metadata")}, "every field"},
		{"bad yaml", "bad.yaml", Target{Line: 1}, []Op{set("/a", "b")}, "bad.yaml"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var in []byte
			if tc.file == "bad.yaml" {
				in = []byte("a: [1, 2\nb: 3\n")
			} else {
				var err error
				if in, err = os.ReadFile(filepath.Join("testdata", tc.file)); err != nil {
					t.Fatal(err)
				}
			}
			out, err := Edit(tc.file, in, tc.target, tc.ops)
			if err == nil {
				t.Fatalf("Edit succeeded:\n%s", out)
			}
			if !strings.Contains(err.Error(), tc.wantErr) || !strings.HasPrefix(err.Error(), tc.file+": ") {
				t.Fatalf("error %q, want it to start with the file and contain %q", err, tc.wantErr)
			}
		})
	}
}

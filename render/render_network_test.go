// Rendering runs in one goroutine (a chart in a child process), and the
// race detector made these tests ten times slower: make test runs them
// without it (make test-norace), the store's and the rest with it.

//go:build !race

package render

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
)

// fetchCounter is an HTTP server on 127.0.0.1 that counts the requests it
// receives and answers each with a ConfigMap, as an attacker's server
// would answer the guard.
func fetchCounter(t *testing.T) (url string, hits *atomic.Int64) {
	t.Helper()
	hits = new(atomic.Int64)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		t.Errorf("the render fetched %s %s", r.Method, r.URL)
		_, _ = w.Write([]byte("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: fetched\ndata:\n  token: stolen\n"))
	}))
	t.Cleanup(srv.Close)
	return srv.URL, hits
}

// TestKustomizeNeverFetches names a URL in every place a kustomization can
// name a file, base or chart: the render fails naming the kustomization
// and the URL, and the server on 127.0.0.1 receives no request.
func TestKustomizeNeverFetches(t *testing.T) {
	u, hits := fetchCounter(t)
	const cm = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm\n"
	gen := func(kind, field string) string {
		return "apiVersion: builtin\nkind: " + kind + "\nmetadata:\n  name: x\n" + field + "\n"
	}
	tests := []struct {
		name     string
		repo     map[string]string
		wantPath string // the kustomization named by the error
		wantURL  string
	}{
		{"resources", map[string]string{"k/kustomization.yaml": "resources:\n- " + u + "/r.yaml\n"}, "k/kustomization.yaml", u + "/r.yaml"},
		{"resources, case of the key", map[string]string{"k/kustomization.yaml": "Resources:\n- " + u + "/R.yaml\n"}, "k/kustomization.yaml", u + "/R.yaml"},
		{"bases", map[string]string{"k/kustomization.yaml": "bases:\n- " + u + "/b.yaml\n"}, "k/kustomization.yaml", u + "/b.yaml"},
		{"remote base over http", map[string]string{"k/kustomization.yaml": "resources:\n- " + u + "/org/repo.git//deploy?ref=main\n"}, "k/kustomization.yaml", u + "/org/repo.git//deploy?ref=main"},
		{"remote base on github.com", map[string]string{"k/kustomization.yaml": "resources:\n- github.com/org/repo//deploy?ref=v1\n"}, "k/kustomization.yaml", "github.com/org/repo//deploy?ref=v1"},
		{"remote base over ssh", map[string]string{"k/kustomization.yaml": "resources:\n- ssh://git@example.com/org/repo.git\n"}, "k/kustomization.yaml", "ssh://git@example.com/org/repo.git"},
		{"remote base, SCP style", map[string]string{"k/kustomization.yaml": "resources:\n- git@example.com:org/repo.git\n"}, "k/kustomization.yaml", "git@example.com:org/repo.git"},
		{"remote base on the guard's disk", map[string]string{"k/kustomization.yaml": "resources:\n- file:///var/run/secrets/repo.git\n"}, "k/kustomization.yaml", "file:///var/run/secrets/repo.git"},
		{"remote base in a base", map[string]string{"k/kustomization.yaml": "resources: [../base]\n", "base/kustomization.yaml": "resources:\n- " + u + "/nested.git?ref=v1\n"}, "base/kustomization.yaml", u + "/nested.git?ref=v1"},
		{"components", map[string]string{"k/kustomization.yaml": "components:\n- " + u + "/c.git?ref=v1\n"}, "k/kustomization.yaml", u + "/c.git?ref=v1"},
		{"patchesStrategicMerge", map[string]string{"k/kustomization.yaml": "resources: [cm.yaml]\npatchesStrategicMerge:\n- " + u + "/psm.yaml\n", "k/cm.yaml": cm}, "k/kustomization.yaml", u + "/psm.yaml"},
		{"patchesJson6902", map[string]string{"k/kustomization.yaml": "resources: [cm.yaml]\npatchesJson6902:\n- path: " + u + "/j.yaml\n  target: {version: v1, kind: ConfigMap, name: cm}\n", "k/cm.yaml": cm}, "k/kustomization.yaml", u + "/j.yaml"},
		{"patches[].path", map[string]string{"k/kustomization.yaml": "resources: [cm.yaml]\npatches:\n- path: " + u + "/p.yaml\n", "k/cm.yaml": cm}, "k/kustomization.yaml", u + "/p.yaml"},
		{"configMapGenerator files", map[string]string{"k/kustomization.yaml": "configMapGenerator:\n- name: x\n  files:\n  - " + u + "/f.txt\n"}, "k/kustomization.yaml", u + "/f.txt"},
		{"configMapGenerator envs", map[string]string{"k/kustomization.yaml": "configMapGenerator:\n- name: x\n  envs:\n  - " + u + "/e.env\n"}, "k/kustomization.yaml", u + "/e.env"},
		{"secretGenerator files", map[string]string{"k/kustomization.yaml": "secretGenerator:\n- name: x\n  files:\n  - key=" + u + "/s.txt\n"}, "k/kustomization.yaml", u + "/s.txt"},
		{"generator file", map[string]string{"k/kustomization.yaml": "generators: [gen.yaml]\n", "k/gen.yaml": gen("ConfigMapGenerator", "files:\n- "+u+"/g.txt")}, "k/kustomization.yaml", u + "/g.txt"},
		{"generator inline", map[string]string{"k/kustomization.yaml": "generators:\n- |\n  " + strings.ReplaceAll(gen("ConfigMapGenerator", "files:\n- "+u+"/gi.txt"), "\n", "\n  ")}, "k/kustomization.yaml", u + "/gi.txt"},
		{"generator from a kustomization folder", map[string]string{"k/kustomization.yaml": "generators: [gen]\n", "k/gen/kustomization.yaml": "resources: [g.yaml]\n", "k/gen/g.yaml": gen("ConfigMapGenerator", "files:\n- "+u+"/gd.txt")}, "k/kustomization.yaml", u + "/gd.txt"},
		{"generator remote", map[string]string{"k/kustomization.yaml": "generators:\n- " + u + "/gen.yaml\n"}, "k/kustomization.yaml", u + "/gen.yaml"},
		{"transformer file", map[string]string{"k/kustomization.yaml": "resources: [cm.yaml]\ntransformers: [t.yaml]\n", "k/cm.yaml": cm, "k/t.yaml": gen("PatchTransformer", "path: "+u+"/t.yaml")}, "k/kustomization.yaml", u + "/t.yaml"},
		{"transformer inline", map[string]string{"k/kustomization.yaml": "resources: [cm.yaml]\ntransformers:\n- |\n  " + strings.ReplaceAll(gen("PatchStrategicMergeTransformer", "paths:\n- "+u+"/ti.yaml"), "\n", "\n  "), "k/cm.yaml": cm}, "k/kustomization.yaml", u + "/ti.yaml"},
		{"transformer replacements", map[string]string{"k/kustomization.yaml": "resources: [cm.yaml]\ntransformers: [t.yaml]\n", "k/cm.yaml": cm, "k/t.yaml": gen("ReplacementTransformer", "replacements:\n- path: "+u+"/rt.yaml")}, "k/kustomization.yaml", u + "/rt.yaml"},
		{"validators", map[string]string{"k/kustomization.yaml": "resources: [cm.yaml]\nvalidators:\n- " + u + "/v.yaml\n", "k/cm.yaml": cm}, "k/kustomization.yaml", u + "/v.yaml"},
		{"replacements path", map[string]string{"k/kustomization.yaml": "resources: [cm.yaml]\nreplacements:\n- path: " + u + "/rep.yaml\n", "k/cm.yaml": cm}, "k/kustomization.yaml", u + "/rep.yaml"},
		{"configurations", map[string]string{"k/kustomization.yaml": "resources: [cm.yaml]\nconfigurations:\n- " + u + "/c.yaml\n", "k/cm.yaml": cm}, "k/kustomization.yaml", u + "/c.yaml"},
		{"crds", map[string]string{"k/kustomization.yaml": "resources: [cm.yaml]\ncrds:\n- " + u + "/crd.json\n", "k/cm.yaml": cm}, "k/kustomization.yaml", u + "/crd.json"},
		{"openapi", map[string]string{"k/kustomization.yaml": "resources: [cm.yaml]\nopenapi:\n  path: " + u + "/o.json\n", "k/cm.yaml": cm}, "k/kustomization.yaml", u + "/o.json"},
		{"helmCharts", map[string]string{"k/kustomization.yaml": "helmCharts:\n- name: web\n  repo: " + u + "/charts\n  version: 1.0.0\n"}, "k/kustomization.yaml", "helmCharts"},
		{"helm generator file", map[string]string{"k/kustomization.yaml": "generators: [h.yaml]\n", "k/h.yaml": gen("HelmChartInflationGenerator", "name: web\nrepo: "+u+"/charts\nversion: 1.0.0")}, "k/kustomization.yaml", "helmCharts"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fsys := files()
			for p, c := range tt.repo {
				fsys[p] = files(p, c)[p]
			}
			objs, err := Render(fsys, "k", Source{})
			t.Log(err)
			var re *RenderError
			if !errors.As(err, &re) {
				t.Fatalf("objects %d, err = %v (%T), want a RenderError", len(objs), err, err)
			}
			if re.Path != tt.wantPath {
				t.Errorf("error at %s, want %s", re.Path, tt.wantPath)
			}
			if !strings.Contains(err.Error(), tt.wantURL) {
				t.Errorf("err = %q, want it to name %s", err, tt.wantURL)
			}
		})
	}
	if n := hits.Load(); n != 0 {
		t.Errorf("the server received %d requests, want 0", n)
	}
}

// TestHelmNeverFetches renders charts that ask for the network or the
// guard's disk in every way Helm offers: a values schema that refers to a
// URL or a local file, lookup, getHostByName, a dependency from a
// repository. The render reads nothing and fetches nothing.
func TestHelmNeverFetches(t *testing.T) {
	u, hits := fetchCounter(t)
	chart := func(kv ...string) map[string]string {
		m := map[string]string{
			"c/Chart.yaml":  "apiVersion: v2\nname: c\nversion: 1.0.0\n",
			"c/values.yaml": "replicas: 1\n",
			"c/templates/cm.yaml": `apiVersion: v1
kind: ConfigMap
metadata:
  name: cm
data:
  secret: {{ (lookup "v1" "Secret" "kube-system" "bootstrap-token") | toJson | quote }}
  host: {{ getHostByName "kubernetes.default.svc" | quote }}
`,
		}
		for i := 0; i+1 < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return m
	}
	tests := []struct {
		name     string
		repo     map[string]string
		wantPath string
		wantErr  string // "" renders
	}{
		{"lookup and getHostByName answer nothing", chart(), "", ""},
		{"schema $ref over http", chart("c/values.schema.json", `{"type": "object", "properties": {"replicas": {"$ref": "`+u+`/schema.json"}}}`), "c/values.schema.json", u + "/schema.json"},
		{"schema $ref to a file of the guard", chart("c/values.schema.json", `{"type": "object", "properties": {"replicas": {"$ref": "file:///etc/hostname"}}}`), "c/values.schema.json", "file:///etc/hostname"},
		{"schema $ref relative to the schema", chart("c/values.schema.json", `{"type": "object", "properties": {"replicas": {"$ref": "other.json"}}}`), "c/values.schema.json", "other.json"},
		{"schema $id over http", chart("c/values.schema.json", `{"$id": "`+u+`/base.json", "type": "object", "properties": {"replicas": {"$ref": "defs.json#/x"}}}`), "c/values.schema.json", u + "/defs.json"},
		{"schema of a subchart", chart("c/charts/sub/Chart.yaml", "apiVersion: v2\nname: sub\nversion: 1.0.0\n", "c/charts/sub/values.yaml", "x: 1\n", "c/charts/sub/values.schema.json", `{"properties": {"x": {"$ref": "`+u+`/sub.json"}}}`), "c/charts/sub/values.schema.json", u + "/sub.json"},
		{"schema meta-schema named by URL", chart("c/values.schema.json", `{"$schema": "https://json-schema.org/draft-07/schema#", "type": "object", "properties": {"replicas": {"type": "integer"}}}`), "", ""},
		{"dependency from a repository", chart("c/Chart.yaml", "apiVersion: v2\nname: c\nversion: 1.0.0\ndependencies:\n- name: sub\n  version: 1.0.0\n  repository: "+u+"/charts\n"), "c/Chart.yaml", "not in charts/"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fsys := files()
			for p, c := range tt.repo {
				fsys[p] = files(p, c)[p]
			}
			objs, err := Render(fsys, "c", Source{})
			if tt.wantErr == "" {
				if err != nil {
					t.Fatal(err)
				}
				data := objs[0].Obj().Object["data"].(map[string]any)
				if data["secret"] != "{}" || data["host"] != "" {
					t.Errorf("lookup and getHostByName gave %v, want nothing", data)
				}
				return
			}
			t.Log(err)
			var re *RenderError
			if !errors.As(err, &re) || re.Path != tt.wantPath {
				t.Fatalf("err = %v, want a RenderError naming %s", err, tt.wantPath)
			}
			if !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("err = %q, want it to name %s", err, tt.wantErr)
			}
			if strings.Contains(err.Error(), "invalid character") {
				t.Errorf("err = %q: the schema's reference was read", err)
			}
		})
	}
	if n := hits.Load(); n != 0 {
		t.Errorf("the server received %d requests, want 0", n)
	}
}

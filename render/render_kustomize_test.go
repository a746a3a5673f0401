package render

import (
	"errors"
	"strings"
	"testing"

	"github.com/driftguard/driftguard/render/sopstest"
)

const (
	baseKustomization = `resources:
- deployment.yaml
- service.yaml
`
	baseDeployment = `# the web server
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
spec:
  replicas: 1
`
	baseService = `apiVersion: v1
kind: Service
metadata:
  name: web
spec:
  ports:
  - port: 80
---
apiVersion: v1
kind: ServiceAccount
metadata:
  name: web
`
	overlayKustomization = `apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
namespace: prod
namePrefix: prod-
resources:
- ../../base
- extra.yaml
configMapGenerator:
- name: settings
  literals:
  - mode=fast
patches:
- path: replicas.yaml
`
	overlayReplicas = `apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
spec:
  replicas: 3
`
	overlayExtra = `apiVersion: v1
kind: ConfigMap
metadata:
  name: extra
`
)

func kustomizeRepo(kv ...string) map[string]string {
	m := map[string]string{
		"base/kustomization.yaml":          baseKustomization,
		"base/deployment.yaml":             baseDeployment,
		"base/service.yaml":                baseService,
		"overlays/prod/kustomization.yaml": overlayKustomization,
		"overlays/prod/replicas.yaml":      overlayReplicas,
		"overlays/prod/extra.yaml":         overlayExtra,
	}
	for i := 0; i+1 < len(kv); i += 2 {
		if kv[i+1] == "" {
			delete(m, kv[i])
			continue
		}
		m[kv[i]] = kv[i+1]
	}
	return m
}

func TestRenderKustomize(t *testing.T) {
	tests := []struct {
		name string
		repo map[string]string
		dir  string
		opts RenderOptions
		want []placed
	}{
		{"overlay over a base: objects name their file and line", kustomizeRepo(), "overlays/prod", RenderOptions{}, []placed{
			{"apps/Deployment/prod/prod-web", "base/deployment.yaml", 2},
			{"/Service/prod/prod-web", "base/service.yaml", 1},
			{"/ServiceAccount/prod/prod-web", "base/service.yaml", 9},
			{"/ConfigMap/prod/prod-extra", "overlays/prod/extra.yaml", 1},
			{"/ConfigMap/prod/prod-settings-x", "overlays/prod/kustomization.yaml", 0}, // a generated name with a hash
		}},
		{"a kustomization below a plain tree is built in its place", map[string]string{
			"clusters/a/00-ns.yaml":             "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: prod\n",
			"clusters/a/app/kustomization.yaml": "namespace: prod\nresources:\n- ../../../base\n",
			"clusters/a/app/ignored.yaml":       "this: is not read as a manifest\n",
			"clusters/a/zz.yaml":                "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: last\n",
			"base/kustomization.yaml":           baseKustomization,
			"base/deployment.yaml":              baseDeployment,
			"base/service.yaml":                 baseService,
		}, "clusters/a", RenderOptions{}, []placed{
			{"/Namespace//prod", "clusters/a/00-ns.yaml", 1},
			{"apps/Deployment/prod/web", "base/deployment.yaml", 2},
			{"/Service/prod/web", "base/service.yaml", 1},
			{"/ServiceAccount/prod/web", "base/service.yaml", 9},
			{"/ConfigMap//last", "clusters/a/zz.yaml", 1},
		}},
		{"Kustomization file name, variables substituted after the build", map[string]string{
			"app/Kustomization": "resources:\n- cm.yaml\nlabels:\n- pairs:\n    env: ${ENV}\n",
			"app/cm.yaml":       "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm-${ENV}\n",
		}, "app", RenderOptions{Vars: map[string]string{"ENV": "prod"}}, []placed{
			{"/ConfigMap//cm-prod", "app/cm.yaml", 1},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fsys := files()
			for p, c := range tt.repo {
				fsys[p] = files(p, c)[p]
			}
			objs, err := RenderWith(fsys, tt.dir, Source{URL: "u", Revision: "r"}, tt.opts)
			if err != nil {
				t.Fatal(err)
			}
			if len(objs) != len(tt.want) {
				for _, o := range objs {
					t.Logf("%s %s:%d", o.Key, o.Source.Path, o.Source.Line)
				}
				t.Fatalf("got %d objects, want %d", len(objs), len(tt.want))
			}
			for i, w := range tt.want {
				o := objs[i]
				key := o.Key.String()
				if strings.HasSuffix(w.key, "-x") { // a generated name with a hash suffix
					key = key[:strings.LastIndex(key, "-")] + "-x"
				}
				if key != w.key || o.Source.Path != w.path || o.Source.Line != w.line {
					t.Errorf("object %d = %s %s:%d, want %s %s:%d", i, o.Key, o.Source.Path, o.Source.Line, w.key, w.path, w.line)
				}
				if o.Source.URL != "u" || o.Source.Revision != "r" {
					t.Errorf("object %d source %+v", i, o.Source)
				}
				if _, has := o.Obj().GetAnnotations()[originAnnotation]; has {
					t.Errorf("object %d keeps the origin annotation the guard asked for", i)
				}
			}
		})
	}
}

func TestRenderKustomizeKeepsRequestedOrigins(t *testing.T) {
	repo := map[string]string{
		"app/kustomization.yaml": "buildMetadata: [originAnnotations]\nresources:\n- cm.yaml\n",
		"app/cm.yaml":            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm\n",
	}
	fsys := files()
	for p, c := range repo {
		fsys[p] = files(p, c)[p]
	}
	objs, err := Render(fsys, "app", Source{})
	if err != nil {
		t.Fatal(err)
	}
	if got := objs[0].Obj().GetAnnotations()[originAnnotation]; !strings.Contains(got, "path: cm.yaml") {
		t.Errorf("origin annotation = %q, want the one the kustomization asked for", got)
	}
}

func TestRenderKustomizeSOPS(t *testing.T) {
	key := newAgeKey(t)
	enc := encrypt(t, plainSecret, sopstest.Options{EncryptedRegex: "^(data|stringData)$"}, key.Recipient)
	other := encrypt(t, strings.Replace(plainSecret, "name: db", "name: unused", 1), sopstest.Options{}, newAgeKey(t).Recipient)
	fsys := files(
		"app/kustomization.yaml", "resources:\n- secret.yaml\n",
		"app/secret.yaml", enc,
		"elsewhere/secret.yaml", other, // another team's file: not used, not an error
	)
	objs, err := RenderWith(fsys, "app", Source{}, RenderOptions{AgeKeys: []string{key.Identity}})
	if err != nil {
		t.Fatal(err)
	}
	sd, _ := objs[0].Obj().Object["stringData"].(map[string]any)
	if sd["password"] != "hunter2-very-secret" || objs[0].Source.Path != "app/secret.yaml" {
		t.Errorf("decrypted secret = %v from %s", sd, objs[0].Source.Path)
	}

	_, err = RenderWith(fsys, "app", Source{}, RenderOptions{AgeKeys: []string{newAgeKey(t).Identity}})
	var re *RenderError
	if !errors.As(err, &re) || re.Path != "app/secret.yaml" || !strings.Contains(err.Error(), "none of the 1 age key given matches") {
		t.Errorf("undecryptable resource: err = %v, want one naming app/secret.yaml and the reason", err)
	}
	if err != nil && strings.Contains(err.Error(), "hunter2") {
		t.Errorf("error reveals the secret: %v", err)
	}
}

func TestRenderKustomizeErrors(t *testing.T) {
	tests := []struct {
		name     string
		repo     map[string]string
		dir      string
		wantPath string
		wantMsg  string
	}{
		{"kustomization does not parse", kustomizeRepo("overlays/prod/kustomization.yaml", "namespace: x\nresources: [unclosed\n"), "overlays/prod", "overlays/prod/kustomization.yaml", "overlays/prod/kustomization.yaml:2: kustomize build overlays/prod: invalid Kustomization"},
		{"unknown field", kustomizeRepo("overlays/prod/kustomization.yaml", "resourcez:\n- x.yaml\n"), "overlays/prod", "overlays/prod/kustomization.yaml", "resourcez"},
		{"missing resource", kustomizeRepo("overlays/prod/kustomization.yaml", "resources:\n- missing.yaml\n"), "overlays/prod", "overlays/prod/kustomization.yaml", "'/overlays/prod/missing.yaml' doesn't exist"},
		{"patch of nothing", kustomizeRepo("overlays/prod/replicas.yaml", strings.Replace(overlayReplicas, "name: web", "name: nope", 1)), "overlays/prod", "overlays/prod/kustomization.yaml", "nope"},
		{"remote base over https", kustomizeRepo("overlays/prod/kustomization.yaml", "resources:\n- https://github.com/org/repo//deploy?ref=v1\n"), "overlays/prod", "overlays/prod/kustomization.yaml", "is remote; remote bases and resources are disabled"},
		{"remote base in a base", kustomizeRepo("base/kustomization.yaml", "resources:\n- github.com/org/repo/deploy\n"), "overlays/prod", "base/kustomization.yaml", `"github.com/org/repo/deploy" is remote`},
		{"remote SCP-style base", kustomizeRepo("overlays/prod/kustomization.yaml", "resources:\n- git@example.com:org/repo.git\n"), "overlays/prod", "overlays/prod/kustomization.yaml", "is remote"},
		{"remote patch file", kustomizeRepo("overlays/prod/kustomization.yaml", "resources: [../../base]\npatches:\n- path: https://example.com/p.yaml\n"), "overlays/prod", "overlays/prod/kustomization.yaml", `"https://example.com/p.yaml" is remote`},
		{"helm charts inside a kustomization", kustomizeRepo("overlays/prod/kustomization.yaml", "helmCharts:\n- name: web\n  repo: https://charts.example\n"), "overlays/prod", "overlays/prod/kustomization.yaml", "helmCharts are not rendered"},
		{"exec plugin", kustomizeRepo("overlays/prod/kustomization.yaml", "resources: [../../base]\ngenerators:\n- gen.yaml\n", "overlays/prod/gen.yaml", "apiVersion: example.com/v1\nkind: Gen\nmetadata:\n  name: g\n  annotations:\n    config.kubernetes.io/function: |\n      exec:\n        path: /bin/sh\n"), "overlays/prod", "overlays/prod/kustomization.yaml", "kustomize build"},
		{"object without a name", kustomizeRepo("overlays/prod/extra.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {}\n"), "overlays/prod", "overlays/prod/extra.yaml", "missing metadata.name"},
		{"bad resource in a base", kustomizeRepo("base/service.yaml", "apiVersion: v1\nkind: Service\nmetadata: [name]\n"), "overlays/prod", "base/service.yaml", "kustomize build overlays/prod"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fsys := files()
			for p, c := range tt.repo {
				fsys[p] = files(p, c)[p]
			}
			_, err := Render(fsys, tt.dir, Source{})
			t.Log(err)
			var re *RenderError
			if !errors.As(err, &re) {
				t.Fatalf("err = %v (%T), want a RenderError", err, err)
			}
			if re.Path != tt.wantPath {
				t.Errorf("error at %s, want %s (%v)", re.Path, tt.wantPath, err)
			}
			if !strings.Contains(err.Error(), tt.wantMsg) {
				t.Errorf("err = %q, want containing %q", err, tt.wantMsg)
			}
		})
	}
}

func TestRenderChartBelowTreeIsAnError(t *testing.T) {
	fsys := files(
		"apps/cm.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm\n",
		"apps/chart/Chart.yaml", "apiVersion: v2\nname: c\nversion: 1.0.0\n",
		"apps/chart/templates/x.yaml", "{{ .Values.x }}\n",
	)
	_, err := Render(fsys, "apps", Source{})
	var re *RenderError
	if !errors.As(err, &re) || re.Path != "apps/chart/Chart.yaml" || !strings.Contains(err.Error(), "set the Guard's path to apps/chart") {
		t.Errorf("err = %v, want one naming apps/chart/Chart.yaml", err)
	}
}

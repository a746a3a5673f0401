package render

import (
	"errors"
	"reflect"
	"strings"
	"testing"
)

const substDeploy = `apiVersion: apps/v1
kind: Deployment
metadata:
  name: web-${CLUSTER}
  namespace: ${NAMESPACE:=shop}
  annotations:
    price: "$${NOT_A_VAR}"
    shell: "$HOME stays"
spec:
  replicas: ${REPLICAS}
  paused: ${PAUSED:=false}
  template:
    spec:
      containers:
      - name: web
        image: "registry/web:${TAG}"
`

func TestSubstitute(t *testing.T) {
	tests := []struct {
		name  string
		vars  map[string]string
		check map[string]any // field path (dot-separated) -> value
	}{
		{"set and defaults", map[string]string{"CLUSTER": "eu1", "REPLICAS": "3", "TAG": "1.2"}, map[string]any{
			"metadata.name":              "web-eu1",
			"metadata.namespace":         "shop",
			"spec.replicas":              int64(3),
			"spec.paused":                false,
			"metadata.annotations.price": "${NOT_A_VAR}",
			"metadata.annotations.shell": "$HOME stays",
		}},
		{"set overrides default", map[string]string{"CLUSTER": "us", "REPLICAS": "1", "TAG": "x", "NAMESPACE": "web", "PAUSED": "true"}, map[string]any{
			"metadata.namespace": "web",
			"spec.paused":        true,
		}},
		{"empty value takes the default of :=", map[string]string{"CLUSTER": "us", "REPLICAS": "1", "TAG": "x", "NAMESPACE": ""}, map[string]any{
			"metadata.namespace": "shop",
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			objs, err := RenderWith(files("apps/web.yaml", substDeploy), "", Source{}, RenderOptions{Vars: tt.vars})
			if err != nil {
				t.Fatal(err)
			}
			o := objs[0]
			for p, want := range tt.check {
				got, _, _ := nested(o.Obj().Object, strings.Split(p, "."))
				if !reflect.DeepEqual(got, want) {
					t.Errorf("%s = %#v, want %#v", p, got, want)
				}
			}
			if o.Key.Name != o.Obj().GetName() || o.Key.Namespace != o.Obj().GetNamespace() {
				t.Errorf("key %s does not follow the substituted name", o.Key)
			}
			if o.Source.Path != "apps/web.yaml" || o.Source.Line != 1 {
				t.Errorf("source %s:%d", o.Source.Path, o.Source.Line)
			}
		})
	}
}

func nested(m map[string]any, path []string) (any, bool, error) {
	var cur any = m
	for _, p := range path {
		mm, ok := cur.(map[string]any)
		if !ok {
			return nil, false, nil
		}
		cur, ok = mm[p]
		if !ok {
			return nil, false, nil
		}
	}
	return cur, true, nil
}

func TestSubstituteOffLeavesManifestsAlone(t *testing.T) {
	objs, err := Render(files("apps/web.yaml", substDeploy), "", Source{})
	if err != nil {
		t.Fatal(err)
	}
	if objs[0].Obj().GetName() != "web-${CLUSTER}" {
		t.Errorf("name = %q: substituted without vars", objs[0].Obj().GetName())
	}
	disabled := strings.Replace(substDeploy, "  annotations:\n", "  annotations:\n    driftguard.io/substitute: disabled\n", 1)
	objs, err = RenderWith(files("apps/web.yaml", disabled), "", Source{}, RenderOptions{Vars: map[string]string{}})
	if err != nil {
		t.Fatalf("an object with substitution disabled: %v", err)
	}
	if objs[0].Obj().GetName() != "web-${CLUSTER}" {
		t.Errorf("name = %q, want it untouched", objs[0].Obj().GetName())
	}
}

func TestSubstituteErrors(t *testing.T) {
	cm := "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cfg\ndata:\n"
	tests := []struct {
		name     string
		fsys     map[string]string
		vars     map[string]string
		wantPath string
		wantLine int
		wantMsg  string
	}{
		{"unset variable", map[string]string{"apps/web.yaml": substDeploy}, map[string]string{"REPLICAS": "1", "TAG": "x"}, "apps/web.yaml", 1, `Deployment ${NAMESPACE:=shop}/web-${CLUSTER}: variable "CLUSTER" is not set and has no default`},
		{"all unset variables at once", map[string]string{"apps/web.yaml": substDeploy}, map[string]string{}, "apps/web.yaml", 1, `variables "CLUSTER", "REPLICAS", "TAG" are not set`},
		{"second document", map[string]string{"a.yaml": cm + "  a: x\n---\n" + cm + "  b: ${B}\n"}, map[string]string{}, "a.yaml", 8, `variable "B" is not set`},
		{"unset inside a default", map[string]string{"a.yaml": cm + "  a: ${A:=${B}}\n"}, map[string]string{}, "a.yaml", 1, `variable "B" is not set`},
		{"value breaks the YAML", map[string]string{"a.yaml": cm + "  a: ${A}\n"}, map[string]string{"A": "[unclosed"}, "a.yaml", 1, "not valid YAML"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fsys := files()
			for p, c := range tt.fsys {
				fsys[p] = files(p, c)[p]
			}
			_, err := RenderWith(fsys, "", Source{}, RenderOptions{Vars: tt.vars})
			var re *RenderError
			if !errors.As(err, &re) {
				t.Fatalf("err = %v, want a RenderError", err)
			}
			if re.Path != tt.wantPath || re.Line != tt.wantLine {
				t.Errorf("at %s:%d, want %s:%d", re.Path, re.Line, tt.wantPath, tt.wantLine)
			}
			if !strings.Contains(err.Error(), tt.wantMsg) {
				t.Errorf("err = %q, want containing %q", err, tt.wantMsg)
			}
		})
	}

	for _, bad := range []string{"my-var", "1ST", "", "A B"} {
		if _, err := RenderWith(files("a.yaml", cm), "", Source{}, RenderOptions{Vars: map[string]string{bad: "x"}}); err == nil {
			t.Errorf("variable name %q accepted", bad)
		}
	}
}

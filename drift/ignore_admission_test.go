package drift

import (
	"reflect"
	"testing"
)

func TestAdmissionIgnores(t *testing.T) {
	rules, err := CompileRules([]RuleSpec{
		{Kind: "Deployment", JSONPointers: []string{"/spec/replicas", "/metadata/annotations/a~1b"}},
		{Kind: "Deployment", Name: "web", JQPathExpressions: []string{`.spec.template.spec.containers[] | select(.name == "proxy") | .image`}},
		{Kind: "Deployment", JSONPointers: []string{"/spec"}, Name: "api"},
		{Kind: "ConfigMap", JSONPointers: []string{"/data"}},
		{ManagedFieldsManagers: []string{"cainjector"}, Users: []string{"system:serviceaccount:cm:cainjector"}},
		{ManagedFieldsManagers: []string{"hpa"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	web := map[string]any{"spec": map[string]any{"template": map[string]any{"spec": map[string]any{"containers": []any{
		map[string]any{"name": "app", "image": "a"}, map[string]any{"name": "proxy", "image": "p"},
	}}}}}
	tests := []struct {
		name, kind, obj string
		desired         map[string]any
		paths           [][]string
		users           []string
	}{
		{name: "pointers and jq", kind: "Deployment", obj: "web", desired: web,
			paths: [][]string{{"metadata", "annotations", "a/b"}, {"spec", "replicas"}, {"spec", "template", "spec", "containers", "1", "image"}},
			users: []string{"system:serviceaccount:cm:cainjector"}},
		{name: "a whole field covers the paths below it", kind: "Deployment", obj: "api", desired: web,
			paths: [][]string{{"metadata", "annotations", "a/b"}, {"spec"}}, users: []string{"system:serviceaccount:cm:cainjector"}},
		{name: "other kind", kind: "Service", obj: "web", users: []string{"system:serviceaccount:cm:cainjector"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			paths, users := AdmissionIgnores(rules, "apps", tt.kind, "shop", tt.obj, tt.desired)
			if !reflect.DeepEqual(paths, tt.paths) || !reflect.DeepEqual(users, tt.users) {
				t.Fatalf("got %q %q, want %q %q", paths, users, tt.paths, tt.users)
			}
		})
	}
}

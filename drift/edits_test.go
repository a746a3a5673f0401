package drift

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

func TestEdits(t *testing.T) {
	const deploy = `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"web","namespace":"shop","resourceVersion":"1","labels":{"app":"web"}},
	"spec":{"replicas":3,"template":{"spec":{"automountServiceAccountToken":false,"containers":[{"name":"web","image":"web:1",
	"securityContext":{"allowPrivilegeEscalation":false}}]}}},"status":{"replicas":3}}`
	tests := []struct {
		name    string
		old     string // deploy when empty
		updated func(m map[string]any)
		rules   []RuleSpec
		want    []string // "path op old→new (git)"
	}{
		{name: "no change", updated: func(map[string]any) {}},
		{name: "server-owned metadata, status and stamp are not edits", updated: func(m map[string]any) {
			md := m["metadata"].(map[string]any)
			md["resourceVersion"], md["generation"], md["managedFields"] = "2", int64(4), []any{}
			md["annotations"] = map[string]any{StampAnnotation: "x", "kubectl.kubernetes.io/last-applied-configuration": "{}"}
			m["status"] = map[string]any{"replicas": int64(1)}
		}},
		{name: "changed scalar with Git's value", updated: func(m map[string]any) {
			m["spec"].(map[string]any)["replicas"] = int64(5)
		}, want: []string{"/spec/replicas changed 3→5 (3)"}},
		{name: "added field Git does not set", updated: func(m map[string]any) {
			spec(m)["hostNetwork"] = true
		}, want: []string{"/spec/template/spec/hostNetwork added <nil>→true (<nil>)"}},
		{name: "removed field Git sets false", updated: func(m map[string]any) {
			delete(spec(m), "automountServiceAccountToken")
		}, want: []string{"/spec/template/spec/automountServiceAccountToken removed false→<nil> (false)"}},
		{name: "added sidecar container", updated: func(m map[string]any) {
			spec(m)["containers"] = append(spec(m)["containers"].([]any), map[string]any{"name": "tap", "image": "evil"})
		}, want: []string{`/spec/template/spec/containers/1 added <nil>→map[image:evil name:tap] (<nil>)`}},
		{name: "removed securityContext field in a named element", updated: func(m map[string]any) {
			c := spec(m)["containers"].([]any)[0].(map[string]any)
			delete(c["securityContext"].(map[string]any), "allowPrivilegeEscalation")
		}, want: []string{"/spec/template/spec/containers/0/securityContext/allowPrivilegeEscalation removed false→<nil> (false)"}},
		{name: "owner reference and finalizer are edits", updated: func(m map[string]any) {
			md := m["metadata"].(map[string]any)
			md["ownerReferences"] = []any{map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "name": "mine", "uid": "u"}}
			md["finalizers"] = []any{"x/y"}
		}, want: []string{"/metadata/finalizers added <nil>→[x/y] (<nil>)", "/metadata/ownerReferences added <nil>→[map[apiVersion:v1 kind:ConfigMap name:mine uid:u]] (<nil>)"}},
		{name: "the last label removed is that label", updated: func(m map[string]any) {
			delete(m["metadata"].(map[string]any), "labels")
		}, want: []string{"/metadata/labels/app removed web→<nil> (web)"}},
		{name: "label added", updated: func(m map[string]any) {
			m["metadata"].(map[string]any)["labels"].(map[string]any)["team"] = "x"
		}, want: []string{"/metadata/labels/team added <nil>→x (<nil>)"}},
		{name: "null is absent", updated: func(m map[string]any) {
			spec(m)["hostNetwork"] = nil
		}},
		{name: "ignore rule hides a path", updated: func(m map[string]any) {
			m["spec"].(map[string]any)["replicas"] = int64(5)
		}, rules: []RuleSpec{{JSONPointers: []string{"/spec/replicas"}}}},
		{name: "ignore rule on a desired element follows it by name", old: `{"spec":{"containers":[{"name":"a","image":"1"},{"name":"b","image":"1"}]}}`,
			updated: func(m map[string]any) {
				c := m["spec"].(map[string]any)["containers"].([]any)
				c[0], c[1] = c[1], c[0]
				c[0].(map[string]any)["image"] = "2" // b
				c[1].(map[string]any)["image"] = "2" // a
			}, rules: []RuleSpec{{JSONPointers: []string{"/spec/containers/1/image"}}},
			want: []string{"/spec/containers/1/image changed 1→2 (1)"}},
		{name: "repeated names compare by index", old: `{"spec":{"m":[{"name":"v","p":"/a"},{"name":"v","p":"/b"}]}}`,
			updated: func(m map[string]any) {
				m["spec"].(map[string]any)["m"].([]any)[0].(map[string]any)["p"] = "/etc"
			}, want: []string{"/spec/m/0/p changed /a→/etc (/a)"}},
		{name: "unnamed list of other length is one change", old: `{"spec":{"args":["a"]}}`,
			updated: func(m map[string]any) {
				m["spec"].(map[string]any)["args"] = []any{"a", "b"}
			}, want: []string{"/spec/args changed [a]→[a b] ([a])"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			src := tt.old
			if src == "" {
				src = deploy
			}
			old, updated, desired := obj(t, src), obj(t, src), obj(t, src)
			tt.updated(updated)
			var opts Options
			if tt.rules != nil {
				rules, err := CompileRules(tt.rules)
				if err != nil {
					t.Fatal(err)
				}
				opts = For(rules, "", "", "", "", nil)
			}
			var got []string
			for _, c := range Edits(old, updated, desired, opts) {
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

func TestEditsRedactSecretData(t *testing.T) {
	old := obj(t, `{"apiVersion":"v1","kind":"Secret","metadata":{"name":"s"},"data":{"k":"c2VjcmV0"}}`)
	updated := obj(t, `{"apiVersion":"v1","kind":"Secret","metadata":{"name":"s"},"data":{"k":"b3RoZXI="},"stringData":{"n":"plain"}}`)
	changes := Edits(old, updated, old, Options{})
	raw, _ := json.Marshal(changes)
	for _, secret := range []string{"c2VjcmV0", "b3RoZXI=", "plain", "cGxhaW4="} {
		if strings.Contains(string(raw), secret) {
			t.Errorf("edits carry %q: %s", secret, raw)
		}
	}
	if len(changes) != 2 {
		t.Errorf("want 2 changes (k changed, n added), got %s", raw)
	}
}

func spec(m map[string]any) map[string]any {
	return m["spec"].(map[string]any)["template"].(map[string]any)["spec"].(map[string]any)
}

func show(v any) string {
	if v == nil {
		return "<nil>"
	}
	switch x := v.(type) {
	case []any:
		parts := make([]string, len(x))
		for i, e := range x {
			parts[i] = show(e)
		}
		return "[" + strings.Join(parts, " ") + "]"
	case map[string]any:
		return formatMap(x)
	}
	return jsonScalar(v)
}

func formatMap(m map[string]any) string {
	keys := unionKeys(m, nil)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = k + ":" + show(m[k])
	}
	return "map[" + strings.Join(parts, " ") + "]"
}

func jsonScalar(v any) string {
	if s, ok := v.(string); ok {
		return s
	}
	b, _ := json.Marshal(v)
	return string(b)
}

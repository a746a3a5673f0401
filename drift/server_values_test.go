package drift

import "testing"

func TestServerValuesFilter(t *testing.T) {
	// Git's text as a CRD whose schema prunes spec.extra, and a value a
	// mutating webhook rewrites.
	desired := map[string]any{
		"apiVersion": "example.com/v1", "kind": "Widget",
		"metadata": map[string]any{"name": "w"},
		"spec":     map[string]any{"size": int64(3), "extra": "pruned", "image": "nginx", "ports": []any{int64(80)}},
	}
	applied := map[string]any{
		"apiVersion": "example.com/v1", "kind": "Widget",
		"metadata": map[string]any{"name": "w", "resourceVersion": "7"},
		"spec":     map[string]any{"size": float64(3), "image": "docker.io/library/nginx", "ports": []any{float64(80)}},
	}
	sv := ServerValuesOf(desired, applied, Options{})
	if len(sv) != 2 {
		t.Fatalf("server values %v: want /spec/extra (absent) and /spec/image", sv)
	}
	withSpec := func(spec map[string]any) map[string]any {
		return map[string]any{"apiVersion": "example.com/v1", "kind": "Widget", "metadata": map[string]any{"name": "w"}, "spec": spec}
	}
	tests := []struct {
		name string
		live map[string]any
		want []string // paths left as drift
	}{
		{"as the server stores it", applied, nil},
		{"real drift next to server values", withSpec(map[string]any{"size": int64(5), "image": "docker.io/library/nginx", "ports": []any{int64(80)}}), []string{"/spec/size"}},
		{"server value itself changed", withSpec(map[string]any{"size": int64(3), "image": "evil", "ports": []any{int64(80)}}), []string{"/spec/image"}},
		{"pruned field present after all", withSpec(map[string]any{"size": int64(3), "extra": "other", "image": "docker.io/library/nginx", "ports": []any{int64(80)}}), []string{"/spec/extra"}},
		{"list changed", withSpec(map[string]any{"size": int64(3), "image": "docker.io/library/nginx", "ports": []any{int64(81)}}), []string{"/spec/ports/0"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := sv.Filter(Compare(desired, tt.live, Options{}))
			var paths []string
			for _, c := range got {
				paths = append(paths, c.Path)
			}
			if len(paths) != len(tt.want) || (len(paths) > 0 && paths[0] != tt.want[0]) {
				t.Fatalf("drift %v, want %v", paths, tt.want)
			}
		})
	}
	if ServerValuesOf(desired, desired, Options{}) != nil {
		t.Fatal("an object the server keeps as Git wrote it has no server values")
	}
	var none ServerValues
	if got := none.Filter([]Change{{Path: "/a"}}); len(got) != 1 {
		t.Fatal("empty server values filter nothing")
	}
}

// The server drops Git's empty values of omitempty fields; an apply's answer
// says which, and only those stay out of the drift. A writer who removes a
// false Git states, where the server keeps it, is drift.
func TestServerValuesDropEmpty(t *testing.T) {
	desired := map[string]any{"kind": "Pod", "spec": map[string]any{
		"hostNetwork": false, "automountServiceAccountToken": false, "volumes": []any{},
	}}
	applied := map[string]any{"kind": "Pod", "spec": map[string]any{"automountServiceAccountToken": false}}
	sv := ServerValuesOf(desired, applied, Options{})
	if got := Paths(sv.Filter(Compare(desired, applied, Options{}))); len(got) != 0 {
		t.Fatalf("as applied: drift %v, want none", got)
	}
	removed := map[string]any{"kind": "Pod", "spec": map[string]any{}}
	got := Paths(sv.Filter(Compare(desired, removed, Options{})))
	if len(got) != 1 || got[0] != "/spec/automountServiceAccountToken" {
		t.Fatalf("false removed: drift %v, want [/spec/automountServiceAccountToken]", got)
	}
}

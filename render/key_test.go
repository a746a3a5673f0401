package render

import "testing"

// TestCompareKeys: keys order by kind, namespace, name, then group.
func TestCompareKeys(t *testing.T) {
	cm := ObjectKey{Kind: "ConfigMap", Namespace: "shop", Name: "cfg"}
	for _, tt := range []struct {
		name string
		a, b ObjectKey
		want int
	}{
		{"same", cm, cm, 0},
		{"kind first", ObjectKey{Kind: "Alpha", Namespace: "z", Name: "z"}, cm, -1},
		{"then namespace", ObjectKey{Kind: "ConfigMap", Namespace: "a", Name: "z"}, cm, -1},
		{"cluster-scoped before namespaced", ObjectKey{Kind: "ConfigMap", Name: "z"}, cm, -1},
		{"then name", ObjectKey{Kind: "ConfigMap", Namespace: "shop", Name: "zz"}, cm, 1},
		{"group last", ObjectKey{Group: "example.com", Kind: "ConfigMap", Namespace: "shop", Name: "cfg"}, cm, 1},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := CompareKeys(tt.a, tt.b); got != tt.want {
				t.Errorf("CompareKeys(%v, %v) = %d, want %d", tt.a, tt.b, got, tt.want)
			}
		})
	}
}

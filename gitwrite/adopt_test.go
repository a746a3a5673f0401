package gitwrite

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/driftguard/driftguard/drift"
	"github.com/driftguard/driftguard/gitwrite/yamledit"
)

func TestAdoptOps(t *testing.T) {
	desired := map[string]any{
		"apiVersion": "apps/v1", "kind": "Deployment", "metadata": map[string]any{"name": "web"},
		"spec": map[string]any{
			"replicas": int64(3),
			"paused":   false,
			"template": map[string]any{"spec": map[string]any{"containers": []any{
				map[string]any{"name": "web", "image": "nginx:1.27", "env": []any{map[string]any{"name": "A", "value": "1"}}},
				map[string]any{"name": "sidecar", "image": "envoy"},
			}}},
			"minReadySeconds": int64(5),
		},
	}
	// The live object lists its containers in another order and lacks
	// minReadySeconds: drift matches containers by name, and the pointers
	// index Git's list.
	live := map[string]any{
		"apiVersion": "apps/v1", "kind": "Deployment", "metadata": map[string]any{"name": "web"},
		"spec": map[string]any{
			"replicas": int64(8),
			"template": map[string]any{"spec": map[string]any{"containers": []any{
				map[string]any{"name": "sidecar", "image": "envoy:1.31"},
				map[string]any{"name": "web", "image": "nginx:1.28", "env": []any{map[string]any{"name": "A", "value": "2"}}},
			}}},
		},
	}
	got := AdoptOps(drift.WithoutDroppedEmpty(drift.Compare(desired, live, drift.Options{})))
	want := []yamledit.Op{
		{Pointer: "/spec/minReadySeconds", Delete: true},
		{Pointer: "/spec/replicas", Value: int64(8)},
		{Pointer: "/spec/template/spec/containers/0/env/0/value", Value: "2"},
		{Pointer: "/spec/template/spec/containers/0/image", Value: "nginx:1.28"},
		{Pointer: "/spec/template/spec/containers/1/image", Value: "envoy:1.31"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("AdoptOps:\n got %+v\nwant %+v", got, want)
	}
}

func TestAdoptionMessage(t *testing.T) {
	at := time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)
	changes := []drift.Change{
		{Path: "/spec/replicas", Desired: int64(3), Live: int64(8)},
		{Path: "/spec/minReadySeconds", Desired: int64(5), Missing: true},
	}
	tests := []struct {
		name string
		a    Adoption
		want []string
	}{
		{"break-glass", Adoption{Object: "Deployment shop/web", File: "apps/web.yaml", Line: 8, Changes: changes, Guard: "shop",
			Reason: "INC-1234: scale for sale\nmore", ChangedBy: "sam", ChangedAt: at, AdoptedBy: "alice"},
			[]string{
				"adopt the live state of Deployment shop/web: INC-1234: scale for sale\n\n",
				"Writes the live value of 2 fields of Deployment shop/web into apps/web.yaml (line 8)",
				"  /spec/replicas: 3 → 8\n",
				"  /spec/minReadySeconds: 5 → (deleted: the live object does not set it)\n",
				"Break-glass-reason: INC-1234: scale for sale more\n",
				"Changed-by: sam at 2026-03-01T10:00:00Z\n",
				"Adopted-by: alice\n",
				"Guard: shop\n",
			}},
		{"summary given", Adoption{Object: "ConfigMap a/b", File: "b.yaml", Line: 1, Changes: changes[:1], Summary: "keep the hotfix"},
			[]string{"keep the hotfix\n\n", "1 field of ConfigMap a/b"}},
		{"long value", Adoption{Object: "ConfigMap a/b", File: "b.yaml", Line: 1, Changes: []drift.Change{{Path: "/data/x", Desired: "a", Live: strings.Repeat("x", 300)}}},
			[]string{`"a" → "` + strings.Repeat("x", 99) + "…"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			msg := tc.a.Message()
			for _, w := range tc.want {
				if !strings.Contains(msg, w) {
					t.Errorf("message lacks %q:\n%s", w, msg)
				}
			}
			if tc.a.Reason == "" && strings.Contains(msg, "Break-glass") {
				t.Errorf("message names a break-glass reason there is none of:\n%s", msg)
			}
		})
	}
}

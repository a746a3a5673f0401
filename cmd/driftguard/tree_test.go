package main

import (
	"testing"

	"github.com/driftguard/driftguard/api/v1alpha1"
	"github.com/driftguard/driftguard/render"
)

// TestSyncStates: the sync state tree guard gives an object from the
// Guard's status.sync, which names at most 20 objects not in sync.
func TestSyncStates(t *testing.T) {
	cm := render.ObjectKey{Kind: "ConfigMap", Namespace: "shop", Name: "settings"}
	ns := render.ObjectKey{Kind: "Namespace", Name: "shop"}
	crd := render.ObjectKey{Group: "example.com", Kind: "Widget", Namespace: "shop", Name: "w"}
	listed := []v1alpha1.ObjectSync{
		{ObjectName: v1alpha1.ObjectName{Kind: "ConfigMap", Namespace: "shop", Name: "settings"}, State: v1alpha1.OutOfSync, Paths: []string{"/data/a", "/data/b"}},
		{ObjectName: v1alpha1.ObjectName{Group: "example.com", Kind: "Widget", Namespace: "shop", Name: "w"}, State: v1alpha1.Unknown, Reason: "kind not served"},
	}
	for _, tt := range []struct {
		name string
		sum  *v1alpha1.SyncSummary
		key  render.ObjectKey
		want string
	}{
		{"not compared yet", nil, cm, "-"},
		{"listed out of sync", &v1alpha1.SyncSummary{InSync: 1, OutOfSync: 1, Unknown: 1, Objects: listed}, cm, "OutOfSync (/data/a, /data/b)"},
		{"listed unknown", &v1alpha1.SyncSummary{InSync: 1, OutOfSync: 1, Unknown: 1, Objects: listed}, crd, "Unknown (kind not served)"},
		{"not listed, list complete", &v1alpha1.SyncSummary{InSync: 1, OutOfSync: 1, Unknown: 1, Objects: listed}, ns, "InSync"},
		{"not listed, list cut", &v1alpha1.SyncSummary{InSync: 1, OutOfSync: 25, Unknown: 1, Objects: listed}, ns, "?"},
		{"all in sync", &v1alpha1.SyncSummary{InSync: 3}, cm, "InSync"},
		{"missing", &v1alpha1.SyncSummary{OutOfSync: 1, Objects: []v1alpha1.ObjectSync{{ObjectName: v1alpha1.ObjectName{Kind: "Namespace", Name: "shop"}, State: v1alpha1.OutOfSync, Paths: []string{"missing"}}}}, ns, "OutOfSync (missing)"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := syncStates(tt.sum)(tt.key); got != tt.want {
				t.Errorf("sync state %q, want %q", got, tt.want)
			}
		})
	}
}

func TestSyncColumn(t *testing.T) {
	for _, tt := range []struct {
		sum  *v1alpha1.SyncSummary
		want string
	}{
		{nil, "-"},
		{&v1alpha1.SyncSummary{}, "0/0"},
		{&v1alpha1.SyncSummary{InSync: 3, OutOfSync: 1, Unknown: 2}, "3/6"},
	} {
		if got := syncColumn(tt.sum); got != tt.want {
			t.Errorf("syncColumn(%+v) = %q, want %q", tt.sum, got, tt.want)
		}
	}
}

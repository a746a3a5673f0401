package watchrevert

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/driftguard/driftguard/api/v1alpha1"
	"github.com/driftguard/driftguard/test/wait"
)

func cmYAML(ns, name, data string) string {
	return fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: %s\n  namespace: %s\ndata:\n%s", name, ns, data)
}

// objectsMetric reads driftguard_objects{guard,state} (the guard runs in
// this process).
func objectsMetric(t *testing.T, guard string) map[string]float64 {
	t.Helper()
	families, err := metrics.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	for _, f := range families {
		if f.GetName() != "driftguard_objects" {
			continue
		}
		for _, m := range f.GetMetric() {
			var g, state string
			for _, l := range m.GetLabel() {
				switch l.GetName() {
				case "guard":
					g = l.GetValue()
				case "state":
					state = l.GetValue()
				}
			}
			if g == guard {
				out[state] = m.GetGauge().GetValue()
			}
		}
	}
	return out
}

func waitSync(t *testing.T, guard string, want v1alpha1.SyncSummary) *v1alpha1.Guard {
	t.Helper()
	var g *v1alpha1.Guard
	wait.Eventually(t, 20*time.Second, fmt.Sprintf("status.sync %+v", want), func() error {
		g = h.Guard(t, guard)
		got := g.Status.Sync
		if got == nil || got.InSync != want.InSync || got.OutOfSync != want.OutOfSync || got.Unknown != want.Unknown {
			return fmt.Errorf("status.sync %+v", got)
		}
		for i, o := range want.Objects {
			if i >= len(got.Objects) || got.Objects[i].ObjectName != o.ObjectName || got.Objects[i].State != o.State ||
				!slices.Equal(got.Objects[i].Paths, o.Paths) || !strings.Contains(got.Objects[i].Reason, o.Reason) {
				return fmt.Errorf("status.sync.objects %+v", got.Objects)
			}
		}
		m := objectsMetric(t, guard)
		if m["InSync"] != float64(want.InSync) || m["OutOfSync"] != float64(want.OutOfSync) || m["Unknown"] != float64(want.Unknown) {
			return fmt.Errorf("driftguard_objects %v", m)
		}
		return nil
	})
	return g
}

// TestSyncStateInStatusMetricAndDiff: each managed object is InSync,
// OutOfSync (with the paths, or missing) or Unknown (why) in status.sync
// and driftguard_objects as the drift watcher sees changes, and driftguard
// diff GUARD says the same of Git's newest revision, with what a sync
// would prune and the fields it would remove.
func TestSyncStateInStatusMetricAndDiff(t *testing.T) {
	t.Parallel()
	const ns = "sync-state"
	repo := h.NewGuard(t, "sync-state", true, map[string]string{
		"ns.yaml": fmt.Sprintf("apiVersion: v1\nkind: Namespace\nmetadata:\n  name: %s\n", ns),
		"a.yaml":  cmYAML(ns, "a", "  greeting: from git\n"),
		"b.yaml":  cmYAML(ns, "b", "  keep: \"1\"\n  gone: \"2\"\n"),
		"c.yaml":  cmYAML(ns, "c", "  x: \"1\"\n"),
		"d.yaml":  cmYAML(ns, "d", "  x: \"1\"\n"),
	}, func(s *v1alpha1.GuardSpec) {
		off := false
		s.SelfHeal = &off
		s.Interval = metav1.Duration{Duration: time.Hour}
	})
	h.WaitApplied(t, repo.Guard, repo.Initial)
	waitSync(t, repo.Guard, v1alpha1.SyncSummary{InSync: 5})

	ctx := context.Background()
	patch := client.RawPatch(types.MergePatchType, []byte(`{"data":{"greeting":"changed"}}`))
	if err := h.Admin.Patch(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "a"}}, patch, client.FieldOwner("hand")); err != nil {
		t.Fatal(err)
	}
	if err := h.Admin.Delete(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "c"}}); err != nil {
		t.Fatal(err)
	}
	waitSync(t, repo.Guard, v1alpha1.SyncSummary{InSync: 3, OutOfSync: 2, Objects: []v1alpha1.ObjectSync{
		{ObjectName: v1alpha1.ObjectName{Kind: "ConfigMap", Namespace: "sync-state", Name: "a"}, State: v1alpha1.OutOfSync, Paths: []string{"/data/greeting"}},
		{ObjectName: v1alpha1.ObjectName{Kind: "ConfigMap", Namespace: "sync-state", Name: "c"}, State: v1alpha1.OutOfSync, Paths: []string{"missing"}},
	}})

	// Git moves on; the Guard, suspended, does not apply it: diff says
	// what a sync of the new revision would do.
	g := h.Guard(t, repo.Guard)
	g.Spec.Suspend = true
	if err := h.Admin.Update(ctx, g); err != nil {
		t.Fatal(err)
	}
	rev := repo.Change(t, "drop b's gone and d", map[string]string{"b.yaml": cmYAML(ns, "b", "  keep: \"1\"\n")}, "d.yaml")
	out, code := driftguardCLI(t, "diff", repo.Guard, "--kubeconfig", h.Cluster.AdminKubeconfig)
	for _, want := range []string{
		`/data/greeting: -"from git" +"changed"`,
		"--- git: ConfigMap sync-state/c (c.yaml:1@" + rev[:7] + ")\n+++ live: missing",
		"--- git: ConfigMap sync-state/b (b.yaml:1@" + rev[:7] + "): a sync removes\n  /data/gone: -\"2\"",
		"prune: ConfigMap sync-state/d left Git; a sync deletes it",
		"3 of 4 objects differ from " + rev[:7] + " (1 InSync, 3 OutOfSync, 0 Unknown)",
	} {
		if !strings.Contains(out, want) {
			t.Fatalf("driftguard diff lacks %q: exit %d\n%s", want, code, out)
		}
	}
	if code != 1 {
		t.Fatalf("driftguard diff: exit %d\n%s", code, out)
	}
}

// TestSyncStateUnknown: an object whose kind the API server does not serve
// cannot be compared: Unknown, with why, in status.sync and in diff.
func TestSyncStateUnknown(t *testing.T) {
	t.Parallel()
	const ns = "sync-unknown"
	repo := h.NewGuard(t, "sync-unknown", true, map[string]string{
		"ns.yaml": fmt.Sprintf("apiVersion: v1\nkind: Namespace\nmetadata:\n  name: %s\n", ns),
		"w.yaml":  fmt.Sprintf("apiVersion: nowhere.example.com/v1\nkind: Widget\nmetadata:\n  name: w\n  namespace: %s\n", ns),
	}, func(s *v1alpha1.GuardSpec) { s.Interval = metav1.Duration{Duration: time.Hour} })
	waitSync(t, repo.Guard, v1alpha1.SyncSummary{InSync: 1, Unknown: 1, Objects: []v1alpha1.ObjectSync{
		{ObjectName: v1alpha1.ObjectName{Group: "nowhere.example.com", Kind: "Widget", Namespace: "sync-unknown", Name: "w"}, State: v1alpha1.Unknown, Reason: "nowhere.example.com/v1/Widget is not watched"},
	}})
	out, code := driftguardCLI(t, "diff", repo.Guard, "--kubeconfig", h.Cluster.AdminKubeconfig)
	if code != 0 || !strings.Contains(out, "? Widget sync-unknown/w (w.yaml:1@") || !strings.Contains(out, "Unknown: the API server does not serve nowhere.example.com/v1, Kind=Widget") ||
		!strings.Contains(out, "0 of 2 objects differ") || !strings.Contains(out, "(1 InSync, 0 OutOfSync, 1 Unknown)") {
		t.Fatalf("driftguard diff: exit %d\n%s", code, out)
	}
}

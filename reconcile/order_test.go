package reconcile

import (
	"fmt"
	"reflect"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/driftguard/driftguard/apply"
	"github.com/driftguard/driftguard/render"
)

// gitObj is an object as Git renders it, from file f at line 1.
func gitObj(apiVersion, kind, name string, ann map[string]string) *render.Object {
	u := &unstructured.Unstructured{}
	u.SetAPIVersion(apiVersion)
	u.SetKind(kind)
	if strings.HasSuffix(name, "-") {
		u.SetGenerateName(name)
	} else {
		u.SetName(name)
	}
	if kind != "Namespace" && kind != "CustomResourceDefinition" {
		u.SetNamespace("shop")
	}
	if ann != nil {
		u.SetAnnotations(ann)
	}
	return render.NewObject(u, render.Source{Path: "app/" + strings.ToLower(kind) + ".yaml", Line: 1})
}

func wave(v string) map[string]string { return map[string]string{SyncWaveAnnotation: v} }

// waveNames is "number: name name | number: ..." with "defs" for the
// wave of Namespaces and definitions.
func waveNames(p *SyncPlan) string {
	var parts []string
	for _, w := range p.Waves {
		var names []string
		for _, o := range w.Objects {
			names = append(names, o.Key.Name)
		}
		label := fmt.Sprint(w.Number)
		if w.Definitions {
			label = "defs"
		}
		parts = append(parts, label+": "+strings.Join(names, " "))
	}
	return strings.Join(parts, " | ")
}

func TestPlanSyncWaves(t *testing.T) {
	tests := []struct {
		name    string
		objs    []*render.Object
		want    string
		ordered bool
	}{
		{"no annotations: namespaces and definitions, then the rest",
			[]*render.Object{gitObj("v1", "ConfigMap", "cfg", nil), gitObj("v1", "Namespace", "shop", nil),
				gitObj("apiextensions.k8s.io/v1", "CustomResourceDefinition", "w.example.com", nil)},
			"defs: shop w.example.com | 0: cfg", false},
		{"waves ascending, negative first, file order within a wave",
			[]*render.Object{gitObj("v1", "Service", "web", wave("2")), gitObj("apps/v1", "Deployment", "web", wave("2")),
				gitObj("apps/v1", "Deployment", "db", wave("-1")), gitObj("v1", "ConfigMap", "cfg", nil)},
			"-1: db | 0: cfg | 2: web web", true},
		{"Argo CD's annotation is read; driftguard's wins when both are set",
			[]*render.Object{gitObj("v1", "ConfigMap", "argo", map[string]string{ArgoSyncWaveAnnotation: "5"}),
				gitObj("v1", "ConfigMap", "both", map[string]string{ArgoSyncWaveAnnotation: "5", SyncWaveAnnotation: "1"})},
			"1: both | 5: argo", true},
		{"a namespace that names a wave is in it; the others come before every wave",
			[]*render.Object{gitObj("v1", "Namespace", "late", wave("3")), gitObj("v1", "Namespace", "shop", nil),
				gitObj("v1", "ConfigMap", "early", wave("-4"))},
			"defs: shop | -4: early | 3: late", true},
		{"spaces around the number are allowed, as Argo CD does",
			[]*render.Object{gitObj("v1", "ConfigMap", "cfg", wave(" 7 "))}, "7: cfg", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p, err := PlanSync(tc.objs)
			if err != nil {
				t.Fatal(err)
			}
			if got := waveNames(p); got != tc.want {
				t.Errorf("waves %q, want %q", got, tc.want)
			}
			if p.Ordered() != tc.ordered {
				t.Errorf("Ordered() = %v, want %v", p.Ordered(), tc.ordered)
			}
		})
	}
}

func TestPlanSyncBadAnnotations(t *testing.T) {
	tests := []struct {
		name string
		obj  *render.Object
		want []string // each must be in the error
	}{
		{"a wave that is not a number", gitObj("apps/v1", "Deployment", "web", wave("first")),
			[]string{"Deployment shop/web", "app/deployment.yaml:1", SyncWaveAnnotation, `"first"`}},
		{"Argo CD's wave, a fraction", gitObj("v1", "Service", "web", map[string]string{ArgoSyncWaveAnnotation: "1.5"}),
			[]string{"Service shop/web", ArgoSyncWaveAnnotation, `"1.5"`}},
		{"a wave beyond 32 bits", gitObj("v1", "ConfigMap", "cfg", wave("4294967296")), []string{`"4294967296"`}},
		{"an empty wave", gitObj("v1", "ConfigMap", "cfg", wave("")), []string{SyncWaveAnnotation, `""`}},
		{"a Helm hook event that does not exist", gitObj("batch/v1", "Job", "migrate", map[string]string{apply.HelmHookAnnotation: "pre-instal"}),
			[]string{"Job shop/migrate", apply.HelmHookAnnotation, `"pre-instal"`}},
		{"an Argo CD hook type that does not exist", gitObj("batch/v1", "Job", "migrate", map[string]string{apply.ArgoHookAnnotation: "presync"}),
			[]string{apply.ArgoHookAnnotation, `"presync"`}},
		{"a hook weight that is not a number", gitObj("batch/v1", "Job", "migrate", map[string]string{apply.HelmHookAnnotation: "pre-install", HelmHookWeightAnnotation: "high"}),
			[]string{HelmHookWeightAnnotation, `"high"`}},
		{"a Helm delete policy in Argo CD's spelling", gitObj("batch/v1", "Job", "migrate", map[string]string{apply.HelmHookAnnotation: "pre-install", HelmHookDeletePolicyAnnotation: "HookSucceeded"}),
			[]string{HelmHookDeletePolicyAnnotation, `"HookSucceeded"`, "hook-succeeded"}},
		{"generateName on an object that is not a hook", gitObj("batch/v1", "Job", "run-", nil),
			[]string{"Job shop/run-", "generateName", "only for hooks"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := PlanSync([]*render.Object{gitObj("v1", "ConfigMap", "fine", nil), tc.obj})
			if err == nil {
				t.Fatal("no error")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
		})
	}
}

func TestPlanSyncHooks(t *testing.T) {
	helm := func(events, weight, policy string) map[string]string {
		m := map[string]string{apply.HelmHookAnnotation: events}
		if weight != "" {
			m[HelmHookWeightAnnotation] = weight
		}
		if policy != "" {
			m[HelmHookDeletePolicyAnnotation] = policy
		}
		return m
	}
	tests := []struct {
		name             string
		ann              map[string]string
		install, upgrade []Phase
		weight, wave     int
		before, ok, bad  bool // delete policies
		never            bool // a hook that never runs
	}{
		{"pre-install only", helm("pre-install", "", ""), []Phase{PhasePreSync}, nil, 0, 0, true, false, false, false},
		{"pre-install and pre-upgrade, weight, policies", helm("pre-install, pre-upgrade", "-5", "hook-succeeded,hook-failed"),
			[]Phase{PhasePreSync}, []Phase{PhasePreSync}, -5, 0, false, true, true, false},
		{"post-upgrade", helm("post-upgrade", "3", "before-hook-creation"), nil, []Phase{PhasePostSync}, 3, 0, true, false, false, false},
		{"post-install and post-upgrade", helm("post-install,post-upgrade", "", ""), []Phase{PhasePostSync}, []Phase{PhasePostSync}, 0, 0, true, false, false, false},
		{"pre-delete never runs", helm("pre-delete", "", ""), nil, nil, 0, 0, false, false, false, true},
		{"Argo PreSync in a wave", map[string]string{apply.ArgoHookAnnotation: "PreSync", ArgoSyncWaveAnnotation: "-1"},
			[]Phase{PhasePreSync}, []Phase{PhasePreSync}, 0, -1, true, false, false, false},
		{"Argo Sync and PostSync, HookSucceeded", map[string]string{apply.ArgoHookAnnotation: "Sync,PostSync", ArgoHookDeletePolicyAnnotation: "HookSucceeded"},
			[]Phase{PhaseSync, PhasePostSync}, []Phase{PhaseSync, PhasePostSync}, 0, 0, false, true, false, false},
		{"Argo SyncFail", map[string]string{apply.ArgoHookAnnotation: "SyncFail"}, []Phase{PhaseSyncFail}, []Phase{PhaseSyncFail}, 0, 0, true, false, false, false},
		{"Argo's annotation wins over Helm's", map[string]string{apply.ArgoHookAnnotation: "PostSync", apply.HelmHookAnnotation: "pre-install"},
			[]Phase{PhasePostSync}, []Phase{PhasePostSync}, 0, 0, true, false, false, false},
		{"Argo Skip: neither applied nor run", map[string]string{apply.ArgoHookAnnotation: "Skip"}, nil, nil, 0, 0, false, false, false, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			o := gitObj("batch/v1", "Job", "migrate-", tc.ann)
			p, err := PlanSync([]*render.Object{o, gitObj("v1", "ConfigMap", "cfg", nil)})
			if err != nil {
				t.Fatal(err)
			}
			if got := waveNames(p); got != "0: cfg" {
				t.Errorf("a hook is among the applied objects: %s", got)
			}
			if tc.never {
				if len(p.Hooks) != 0 {
					t.Errorf("hooks %+v, want none", p.Hooks)
				}
				return
			}
			if len(p.Hooks) != 1 {
				t.Fatalf("%d hooks", len(p.Hooks))
			}
			h := p.Hooks[0]
			if !reflect.DeepEqual(h.Install, tc.install) || !reflect.DeepEqual(h.Upgrade, tc.upgrade) {
				t.Errorf("install %v upgrade %v, want %v and %v", h.Install, h.Upgrade, tc.install, tc.upgrade)
			}
			if h.Weight != tc.weight || h.Wave != tc.wave || h.DeleteBefore != tc.before || h.DeleteSucceeded != tc.ok || h.DeleteFailed != tc.bad {
				t.Errorf("weight %d wave %d policies %v/%v/%v, want %d %d %v/%v/%v", h.Weight, h.Wave, h.DeleteBefore, h.DeleteSucceeded, h.DeleteFailed,
					tc.weight, tc.wave, tc.before, tc.ok, tc.bad)
			}
			if !p.Ordered() {
				t.Error("a plan with hooks is not Ordered")
			}
		})
	}
}

// Hooks of a phase run in groups of one wave and weight, lowest first.
func TestHooksAtGroups(t *testing.T) {
	h := func(name, weight, wave string) *render.Object {
		return gitObj("batch/v1", "Job", name, map[string]string{apply.HelmHookAnnotation: "pre-install,pre-upgrade", HelmHookWeightAnnotation: weight, SyncWaveAnnotation: wave})
	}
	post := gitObj("batch/v1", "Job", "report", map[string]string{apply.HelmHookAnnotation: "post-upgrade"})
	p, err := PlanSync([]*render.Object{h("c", "1", "0"), h("a", "1", "0"), h("b", "-1", "0"), h("z", "-9", "1"), post})
	if err != nil {
		t.Fatal(err)
	}
	names := func(groups [][]*Hook) string {
		var out []string
		for _, g := range groups {
			var n []string
			for _, h := range g {
				n = append(n, h.Object.Key.Name)
			}
			out = append(out, strings.Join(n, ","))
		}
		return strings.Join(out, " then ")
	}
	if got, want := names(p.HooksAt(PhasePreSync, true, nil)), "b then a,c then z"; got != want {
		t.Errorf("PreSync groups %q, want %q", got, want)
	}
	if got := names(p.HooksAt(PhasePostSync, true, nil)); got != "" {
		t.Errorf("an install runs no post-upgrade hook: %q", got)
	}
	if got := names(p.HooksAt(PhasePostSync, false, nil)); got != "report" {
		t.Errorf("an upgrade's PostSync: %q", got)
	}
}

// Prune deletes the highest wave first, namespaces and definitions last,
// whatever order the kinds were listed in.
func TestPruneOrder(t *testing.T) {
	item := func(group, kind, name string) labelled {
		return labelled{GVK: schema.GroupVersionKind{Group: group, Version: "v1", Kind: kind}, Key: key(group, kind, "shop", name)}
	}
	items := []labelled{item("", "Namespace", "shop"), item("", "ConfigMap", "cfg"), item("apps", "Deployment", "db"),
		item("apps", "Deployment", "web"), item("", "Service", "web")}
	inv := inventoryOf(map[render.ObjectKey]InventoryItem{
		items[0].Key: {"v1", "1", 0}, items[1].Key: {"v1", "2", 0}, items[2].Key: {"v1", "3", -1},
		items[3].Key: {"v1", "4", 2}, items[4].Key: {"v1", "5", 2},
	})
	var got []string
	for _, it := range pruneOrder(items, inv) {
		got = append(got, it.Key.Kind+"/"+it.Key.Name)
	}
	want := []string{"Deployment/web", "Service/web", "ConfigMap/cfg", "Deployment/db", "Namespace/shop"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("prune order %v, want %v", got, want)
	}
}

// The waves of a sync: the Namespaces and definitions that name none
// first, then every wave of objects and, in a sync of the whole revision,
// every wave of a Sync hook (even one without objects).
func TestWaveSteps(t *testing.T) {
	syncHook := func(name, wave string) *render.Object {
		return gitObj("batch/v1", "Job", name, map[string]string{apply.ArgoHookAnnotation: "Sync", ArgoSyncWaveAnnotation: wave})
	}
	p, err := PlanSync([]*render.Object{
		gitObj("v1", "Namespace", "shop", nil), gitObj("v1", "ConfigMap", "a", wave("2")), gitObj("v1", "ConfigMap", "b", nil),
		syncHook("between", "1"), syncHook("with-a", "2"),
	})
	if err != nil {
		t.Fatal(err)
	}
	steps := func(whole bool) string {
		var out []string
		for _, s := range waveSteps(p, false, whole) {
			out = append(out, s.String())
		}
		return strings.Join(out, ", ")
	}
	for _, tc := range []struct {
		whole bool
		want  string
	}{
		{true, "the namespaces and definitions, wave 0, wave 1, wave 2"},
		{false, "the namespaces and definitions, wave 0, wave 2"},
	} {
		if got := steps(tc.whole); got != tc.want {
			t.Errorf("whole=%v: steps %q, want %q", tc.whole, got, tc.want)
		}
	}
}

// spec.createNamespace creates the namespaces of hooks too, once each.
func TestMissingNamespacesOfHooks(t *testing.T) {
	hookIn := func(ns string) *Hook {
		o := gitObj("batch/v1", "Job", "migrate", map[string]string{apply.HelmHookAnnotation: "pre-install"})
		u := o.Obj().DeepCopy()
		u.SetNamespace(ns)
		return &Hook{Object: render.NewObject(u, o.Source)}
	}
	snap, err := render.NewSnapshot("u", "r", []*render.Object{gitObj("v1", "ConfigMap", "cfg", nil), gitObj("v1", "Namespace", "declared", nil)})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name  string
		hooks []*Hook
		want  []string
	}{
		{"no hooks", nil, []string{"shop"}},
		{"a hook in a namespace of its own", []*Hook{hookIn("jobs")}, []string{"shop", "jobs"}},
		{"hooks in the objects' and a declared namespace", []*Hook{hookIn("shop"), hookIn("declared")}, []string{"shop"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := missingNamespaces(snap, tc.hooks); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("missing namespaces %v, want %v", got, tc.want)
			}
		})
	}
}

package reconcile

import (
	"fmt"
	"reflect"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/driftguard/driftguard/api/v1alpha1"
	"github.com/driftguard/driftguard/render"
)

// stateTable answers SyncState from a table keyed by name.
type stateTable map[string]struct {
	state  v1alpha1.SyncState
	paths  []string
	reason string
}

func (s stateTable) SyncState(_ schema.GroupVersionKind, _, name string) (v1alpha1.SyncState, []string, string) {
	e, ok := s[name]
	if !ok {
		return v1alpha1.InSync, nil, ""
	}
	return e.state, e.paths, e.reason
}

func configMaps(t *testing.T, names ...string) *render.Snapshot {
	t.Helper()
	objs := make([]*render.Object, 0, len(names))
	for _, n := range names {
		u := &unstructured.Unstructured{}
		u.SetAPIVersion("v1")
		u.SetKind("ConfigMap")
		u.SetNamespace("ns")
		u.SetName(n)
		objs = append(objs, render.NewObject(u, render.Source{Path: n + ".yaml", Line: 1}))
	}
	snap, err := render.NewSnapshot("https://git.example/r.git", "abc", objs)
	if err != nil {
		t.Fatal(err)
	}
	return snap
}

func TestSummarizeSync(t *testing.T) {
	many := make([]string, 30)
	manyStates := stateTable{}
	for i := range many {
		many[i] = fmt.Sprintf("cm%02d", i)
		manyStates[many[i]] = struct {
			state  v1alpha1.SyncState
			paths  []string
			reason string
		}{state: v1alpha1.Unknown, reason: "not read yet"}
	}
	manyStates["cm29"] = struct {
		state  v1alpha1.SyncState
		paths  []string
		reason string
	}{state: v1alpha1.OutOfSync, paths: []string{"/data/a"}}
	for _, tc := range []struct {
		name   string
		snap   *render.Snapshot
		states SyncStates
		want   *v1alpha1.SyncSummary
	}{
		{name: "no snapshot", states: stateTable{}},
		{name: "no states", snap: configMaps(t, "a")},
		{name: "all in sync", snap: configMaps(t, "a", "b"), states: stateTable{}, want: &v1alpha1.SyncSummary{InSync: 2}},
		{name: "each state, out of sync first, paths kept, missing named", snap: configMaps(t, "a", "b", "c", "d"), states: stateTable{
			"a": {state: v1alpha1.Unknown, reason: "kind not served", paths: []string{"/x"}},
			"c": {state: v1alpha1.OutOfSync, paths: []string{"/data/x", "/metadata/labels/y"}, reason: "ignored"},
			"d": {state: v1alpha1.OutOfSync},
		}, want: &v1alpha1.SyncSummary{InSync: 1, OutOfSync: 2, Unknown: 1, Objects: []v1alpha1.ObjectSync{
			{ObjectName: v1alpha1.ObjectName{Kind: "ConfigMap", Namespace: "ns", Name: "c"}, State: v1alpha1.OutOfSync, Paths: []string{"/data/x", "/metadata/labels/y"}},
			{ObjectName: v1alpha1.ObjectName{Kind: "ConfigMap", Namespace: "ns", Name: "d"}, State: v1alpha1.OutOfSync, Paths: []string{MissingPath}},
			{ObjectName: v1alpha1.ObjectName{Kind: "ConfigMap", Namespace: "ns", Name: "a"}, State: v1alpha1.Unknown, Reason: "kind not served"},
		}}},
		{name: "a state nobody knows is Unknown", snap: configMaps(t, "a"), states: stateTable{"a": {state: "Weird"}},
			want: &v1alpha1.SyncSummary{Unknown: 1, Objects: []v1alpha1.ObjectSync{{ObjectName: v1alpha1.ObjectName{Kind: "ConfigMap", Namespace: "ns", Name: "a"}, State: v1alpha1.Unknown}}}},
		{name: "bounded list, complete counts, the out of sync one kept", snap: configMaps(t, many...), states: manyStates,
			want: func() *v1alpha1.SyncSummary {
				s := &v1alpha1.SyncSummary{OutOfSync: 1, Unknown: 29}
				s.Objects = append(s.Objects, v1alpha1.ObjectSync{ObjectName: v1alpha1.ObjectName{Kind: "ConfigMap", Namespace: "ns", Name: "cm29"}, State: v1alpha1.OutOfSync, Paths: []string{"/data/a"}})
				for i := range maxSyncListed - 1 {
					s.Objects = append(s.Objects, v1alpha1.ObjectSync{ObjectName: v1alpha1.ObjectName{Kind: "ConfigMap", Namespace: "ns", Name: many[i]}, State: v1alpha1.Unknown, Reason: "not read yet"})
				}
				return s
			}()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := SummarizeSync(tc.snap, tc.states)
			if !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("got  %+v\nwant %+v", got, tc.want)
			}
		})
	}
}

func TestAppliedOf(t *testing.T) {
	snap := configMaps(t, "a", "b", "c")
	key := func(n string) render.ObjectKey {
		return render.ObjectKey{Kind: "ConfigMap", Namespace: "ns", Name: n}
	}
	for _, tc := range []struct {
		name  string
		inv   []string
		n     int
		kinds int
	}{
		{name: "nothing applied", n: 0},
		{name: "two of three", inv: []string{"a", "c"}, n: 2, kinds: 1},
		{name: "an object that left Git does not count", inv: []string{"a", "gone"}, n: 1, kinds: 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			inv := NewInventory()
			for _, n := range tc.inv {
				inv.Put(key(n), "v1", types.UID("uid-"+n))
			}
			n, kinds := appliedOf(snap, inv)
			if n != tc.n || len(kinds) != tc.kinds {
				t.Fatalf("appliedOf = %d, %v; want %d objects of %d kinds", n, kinds, tc.n, tc.kinds)
			}
		})
	}
}

package render

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

func obj(apiVersion, kind, ns, name string) *Object {
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": apiVersion, "kind": kind,
		"metadata": map[string]any{"name": name, "namespace": ns},
	}}
	return NewObject(u, Source{Path: name + ".yaml", Line: 1})
}

func snapshot(t testing.TB, rev string, objs ...*Object) *Snapshot {
	t.Helper()
	s, err := NewSnapshot("http://git/x.git", rev, objs)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func key(s string) ObjectKey {
	var k ObjectKey
	parts := [4]*string{&k.Group, &k.Kind, &k.Namespace, &k.Name}
	i := 0
	for _, r := range s {
		if r == '/' && i < 3 {
			i++
			continue
		}
		*parts[i] += string(r)
	}
	return k
}

func TestObjectKeyString(t *testing.T) {
	tests := []struct {
		o    *Object
		want string
	}{
		{obj("apps/v1", "Deployment", "shop", "web"), "apps/Deployment/shop/web"},
		{obj("v1", "ConfigMap", "shop", "cfg"), "/ConfigMap/shop/cfg"},
		{obj("v1", "Namespace", "", "shop"), "/Namespace//shop"},
	}
	for _, tt := range tests {
		if got := tt.o.Key.String(); got != tt.want {
			t.Errorf("String() = %q, want %q", got, tt.want)
		}
	}
}

func TestSnapshotKinds(t *testing.T) {
	s := snapshot(t, "r",
		obj("v1", "Service", "a", "x"), obj("apps/v1", "Deployment", "a", "x"),
		obj("v1", "ConfigMap", "a", "x"), obj("v1", "ConfigMap", "a", "y"))
	want := []schema.GroupVersionKind{
		{Version: "v1", Kind: "ConfigMap"}, {Version: "v1", Kind: "Service"},
		{Group: "apps", Version: "v1", Kind: "Deployment"},
	}
	if got := s.Kinds(); !slices.Equal(got, want) {
		t.Fatalf("Kinds() = %v, want %v", got, want)
	}
}

func TestSnapshotWithout(t *testing.T) {
	s := snapshot(t, "r", obj("v1", "ConfigMap", "a", "x"), obj("apps/v1", "Deployment", "a", "x"), obj("v1", "ConfigMap", "a", "y"))
	tests := []struct {
		name      string
		drop      func(*Object) bool
		wantNames []string
		wantKinds int
	}{
		{"none", func(*Object) bool { return false }, []string{"x", "x", "y"}, 2},
		{"the first", func(o *Object) bool { return o.Key.Kind == "ConfigMap" && o.Key.Name == "x" }, []string{"x", "y"}, 2},
		{"a kind's only object", func(o *Object) bool { return o.Key.Kind == "Deployment" }, []string{"x", "y"}, 1},
		{"all", func(*Object) bool { return true }, nil, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := s.Without(tt.drop)
			var names []string
			for _, o := range got.Objects {
				names = append(names, o.Key.Name)
				if g, ok := got.Get(o.Key); !ok || g != o {
					t.Fatalf("Get(%s) = %v %v", o.Key, g, ok)
				}
			}
			if !slices.Equal(names, tt.wantNames) || len(got.Kinds()) != tt.wantKinds {
				t.Fatalf("objects %v kinds %v", names, got.Kinds())
			}
			if (got == s) != (len(tt.wantNames) == len(s.Objects)) {
				t.Fatal("a snapshot that drops nothing is the snapshot itself, and only then")
			}
			for _, o := range s.Objects {
				if _, ok := got.Get(o.Key); ok == tt.drop(o) {
					t.Fatalf("Get(%s) after dropping: %v", o.Key, ok)
				}
			}
		})
	}
	if len(s.Objects) != 3 {
		t.Fatal("Without changed the snapshot")
	}
}

func TestStore(t *testing.T) {
	cm := obj("v1", "ConfigMap", "shop", "cfg")
	deploy := obj("apps/v1", "Deployment", "shop", "web")
	cmB := obj("v1", "ConfigMap", "shop", "cfg") // b claims a's ConfigMap too
	svcB := obj("v1", "Service", "shop", "web")

	s := NewStore()
	var calls atomic.Int64
	s.Subscribe(func() {
		// Called without the lock: reading must not dead-lock.
		s.Lookup(cm.Key)
		calls.Add(1)
	})

	type lookup struct {
		key   string
		guard string
		obj   *Object
	}
	steps := []struct {
		name      string
		do        func()
		lookups   []lookup
		conflicts map[string][]string
		kinds     int
	}{
		{
			name:    "set a",
			do:      func() { s.Set("a", snapshot(t, "1", cm, deploy)) },
			lookups: []lookup{{cm.Key.String(), "a", cm}, {deploy.Key.String(), "a", deploy}, {svcB.Key.String(), "", nil}},
			kinds:   2,
		},
		{
			name:      "b claims a's key: a keeps it",
			do:        func() { s.Set("b", snapshot(t, "1", cmB, svcB)) },
			lookups:   []lookup{{cm.Key.String(), "a", cm}, {svcB.Key.String(), "b", svcB}},
			conflicts: map[string][]string{"a": nil, "b": {cm.Key.String()}},
			kinds:     3,
		},
		{
			name:      "a sets again with the key: still a's",
			do:        func() { s.Set("a", snapshot(t, "2", cm)) },
			lookups:   []lookup{{cm.Key.String(), "a", cm}, {deploy.Key.String(), "", nil}},
			conflicts: map[string][]string{"b": {cm.Key.String()}},
			kinds:     2,
		},
		{
			name:      "a drops the key: b takes over",
			do:        func() { s.Set("a", snapshot(t, "3", deploy)) },
			lookups:   []lookup{{cm.Key.String(), "b", cmB}, {deploy.Key.String(), "a", deploy}},
			conflicts: map[string][]string{"a": nil, "b": nil},
			kinds:     3,
		},
		{
			name:      "a claims it again: b keeps it",
			do:        func() { s.Set("a", snapshot(t, "4", deploy, cm)) },
			lookups:   []lookup{{cm.Key.String(), "b", cmB}},
			conflicts: map[string][]string{"a": {cm.Key.String()}, "b": nil},
			kinds:     3,
		},
		{
			name:      "remove b",
			do:        func() { s.Remove("b") },
			lookups:   []lookup{{cm.Key.String(), "a", cm}, {svcB.Key.String(), "", nil}},
			conflicts: map[string][]string{"a": nil},
			kinds:     2,
		},
		{
			name:    "set nil removes",
			do:      func() { s.Set("a", nil) },
			lookups: []lookup{{cm.Key.String(), "", nil}, {deploy.Key.String(), "", nil}},
			kinds:   0,
		},
	}
	for i, st := range steps {
		st.do()
		if got := calls.Load(); got != int64(i+1) {
			t.Fatalf("%s: subscriber called %d times, want %d", st.name, got, i+1)
		}
		for _, l := range st.lookups {
			g, o, ok := s.Lookup(key(l.key))
			if g != l.guard || o != l.obj || ok != (l.obj != nil) {
				t.Errorf("%s: Lookup(%s) = %q %v %v, want %q %v", st.name, l.key, g, o, ok, l.guard, l.obj)
			}
		}
		for g, want := range st.conflicts {
			var got []string
			for _, k := range s.Conflicts(g) {
				got = append(got, k.String())
			}
			if !slices.Equal(got, want) {
				t.Errorf("%s: Conflicts(%s) = %v, want %v", st.name, g, got, want)
			}
		}
		if got := len(s.Kinds()); got != st.kinds {
			t.Errorf("%s: %d kinds, want %d", st.name, got, st.kinds)
		}
	}
	if _, ok := s.Snapshot("a"); ok {
		t.Error("Snapshot(a) after removal")
	}
	s.Remove("never-set")
	if calls.Load() != int64(len(steps)) {
		t.Error("removing an unknown guard notified subscribers")
	}
}

func TestStoreConcurrent(t *testing.T) {
	s := NewStore()
	var notified atomic.Int64
	s.Subscribe(func() { notified.Add(1) })
	shared := obj("v1", "ConfigMap", "shop", "shared")
	var wg sync.WaitGroup
	for g := range 4 {
		guard := fmt.Sprintf("g%d", g)
		wg.Go(func() {
			for i := range 200 {
				own := obj("v1", "ConfigMap", guard, fmt.Sprintf("o%d", i%5))
				s.Set(guard, snapshot(t, fmt.Sprint(i), own, shared))
				if i%50 == 25 {
					s.Remove(guard)
				}
			}
		})
		wg.Go(func() {
			for i := range 2000 {
				if g, o, ok := s.Lookup(shared.Key); ok && (g == "" || o == nil) {
					t.Errorf("Lookup = %q %v", g, o)
					return
				}
				s.Lookup(key("/ConfigMap/" + guard + "/o" + fmt.Sprint(i%5)))
				s.Kinds()
				s.Conflicts(guard)
				s.Snapshot(guard)
			}
		})
	}
	wg.Wait()
	if notified.Load() != 4*(200+4) {
		t.Errorf("notified %d times, want %d", notified.Load(), 4*204)
	}
	// Every guard ends with its snapshot set; exactly one owns the shared key.
	g, _, ok := s.Lookup(shared.Key)
	if !ok {
		t.Fatal("shared key not indexed")
	}
	owners := 0
	for i := range 4 {
		guard := fmt.Sprintf("g%d", i)
		if !slices.Contains(s.Conflicts(guard), shared.Key) {
			owners++
			if guard != g {
				t.Errorf("%s has no conflict but %s owns the key", guard, g)
			}
		}
	}
	if owners != 1 {
		t.Errorf("%d owners of the shared key", owners)
	}
}

// TestStoreClaimOrder: of four Guards claiming one key, the first owns it;
// one that does not own it lets go without a change; when the owner lets go
// the next in claim order takes over.
func TestStoreClaimOrder(t *testing.T) {
	s := NewStore()
	objs := map[string]*Object{}
	for _, g := range []string{"a", "b", "c", "d"} {
		objs[g] = obj("v1", "ConfigMap", "shop", "cfg")
		s.Set(g, snapshot(t, "1", objs[g]))
	}
	k := objs["a"].Key
	for _, step := range []struct {
		remove, owner string
	}{{"", "a"}, {"c", "a"}, {"a", "b"}, {"b", "d"}, {"d", ""}} {
		if step.remove != "" {
			s.Remove(step.remove)
		}
		g, o, ok := s.Lookup(k)
		if g != step.owner || ok != (step.owner != "") || (ok && o != objs[step.owner]) {
			t.Fatalf("after removing %q: owner %q (%v), want %q", step.remove, g, ok, step.owner)
		}
	}
}

// TestStoreReserve: what each Guard applied before (Reserve) is its own
// from the start, whichever Guard renders first; a reservation its first
// snapshot no longer declares goes to the next claimant; Reserve reserves
// once, and again after a failure.
func TestStoreReserve(t *testing.T) {
	cm := key("/ConfigMap/shop/cfg")
	other := key("/ConfigMap/shop/other")
	type step struct {
		do     string // "set a", "set a -" (without cm), "remove a"
		owner  string // Owner(cm)
		lookup string // Lookup(cm)'s guard, "" when not ok
	}
	for _, tc := range []struct {
		name     string
		reserve  []Holding
		before   []string // Guards set before Reserve
		removed  []string // Guards removed before Reserve
		steps    []step
		conflict string // a Guard whose Conflicts end up holding cm
	}{{
		name:    "the holder keeps it though another renders first",
		reserve: []Holding{{"a", []ObjectKey{cm, other}}},
		steps: []step{
			{do: "set b", owner: "a", lookup: ""},
			{do: "set a", owner: "a", lookup: "a"},
		},
		conflict: "b",
	}, {
		name:    "a reservation the holder's Git dropped goes to the next",
		reserve: []Holding{{"a", []ObjectKey{cm}}},
		steps: []step{
			{do: "set b", owner: "a", lookup: ""},
			{do: "set a -", owner: "b", lookup: "b"},
		},
	}, {
		name:    "a removed holder lets go",
		reserve: []Holding{{"a", []ObjectKey{cm}}},
		steps: []step{
			{do: "remove a", owner: "", lookup: ""},
			{do: "set b", owner: "b", lookup: "b"},
		},
	}, {
		name:    "two holders: the first given",
		reserve: []Holding{{"a", []ObjectKey{cm}}, {"b", []ObjectKey{cm}}},
		steps: []step{
			{do: "set b", owner: "a", lookup: ""},
			{do: "set a -", owner: "b", lookup: "b"},
		},
	}, {
		name:    "a Guard removed while the inventories were read is not reserved for",
		reserve: []Holding{{"a", []ObjectKey{cm}}},
		removed: []string{"a"},
		steps: []step{
			{do: "set b", owner: "b", lookup: "b"},
		},
	}, {
		name:    "a Guard that rendered already is not reserved for",
		reserve: []Holding{{"a", []ObjectKey{cm}}},
		before:  []string{"b"},
		steps: []step{
			{do: "set a", owner: "b", lookup: "b"},
		},
		conflict: "a",
	}} {
		t.Run(tc.name, func(t *testing.T) {
			s := NewStore()
			set := func(g string, withCM bool) {
				objs := []*Object{obj("v1", "ConfigMap", "shop", "x-"+g)}
				if withCM {
					objs = append(objs, obj("v1", "ConfigMap", "shop", "cfg"))
				}
				s.Set(g, snapshot(t, "1", objs...))
			}
			for _, g := range tc.before {
				set(g, true)
			}
			for _, g := range tc.removed {
				s.Remove(g)
			}
			if err := s.Reserve(func() ([]Holding, error) { return tc.reserve, nil }); err != nil {
				t.Fatal(err)
			}
			for _, st := range tc.steps {
				verb, g, _ := strings.Cut(st.do, " ")
				switch verb {
				case "set":
					g, without := strings.CutSuffix(g, " -")
					set(g, !without)
				case "remove":
					s.Remove(g)
				}
				if got := s.Owner(cm); got != st.owner {
					t.Fatalf("after %q: Owner %q, want %q", st.do, got, st.owner)
				}
				g2, o, ok := s.Lookup(cm)
				if g2 != st.lookup || ok != (st.lookup != "") || (ok && o == nil) {
					t.Fatalf("after %q: Lookup %q (%v), want %q", st.do, g2, ok, st.lookup)
				}
			}
			if tc.conflict != "" && !slices.Contains(s.Conflicts(tc.conflict), cm) {
				t.Errorf("Conflicts(%s) = %v, want %v in it", tc.conflict, s.Conflicts(tc.conflict), cm)
			}
		})
	}

	t.Run("once, and again after a failure", func(t *testing.T) {
		s := NewStore()
		calls := 0
		held := func(h []Holding, err error) func() ([]Holding, error) {
			return func() ([]Holding, error) { calls++; return h, err }
		}
		if err := s.Reserve(held(nil, fmt.Errorf("inventories unreadable"))); err == nil {
			t.Fatal("Reserve hid the error")
		}
		if err := s.Reserve(held([]Holding{{"a", []ObjectKey{cm}}}, nil)); err != nil {
			t.Fatal(err)
		}
		if err := s.Reserve(held([]Holding{{"b", []ObjectKey{other}}}, nil)); err != nil {
			t.Fatal(err)
		}
		if calls != 2 || s.Owner(cm) != "a" || s.Owner(other) != "" {
			t.Errorf("calls %d, owners %q %q; want 2 calls, a, none", calls, s.Owner(cm), s.Owner(other))
		}
		s.Set("c", snapshot(t, "1", obj("v1", "ConfigMap", "shop", "c")))
		if got := s.Guards(); !slices.Equal(got, []string{"a", "c"}) {
			t.Errorf("Guards %v, want a (reserved) and c", got)
		}
	})
}

package reconcile

import (
	"slices"
	"testing"
	"time"

	"github.com/go-logr/logr/testr"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/driftguard/driftguard/api/v1alpha1"
	"github.com/driftguard/driftguard/render"
)

// TestHoldings: the inventories are read a page at a time from the API
// server, the oldest Guard's first whatever the names, and only those a
// Guard owns by UID count: a ConfigMap labelled and named as an inventory
// but owned by no Guard, or by another, holds nothing. A replica elected
// forgets the reservations of a Guard deleted before (forgetGone).
func TestHoldings(t *testing.T) {
	e := startReadsEnv(t)
	ctx := t.Context()
	defer func(n int64) { holdingsPage = n }(holdingsPage)
	holdingsPage = 2
	reader := &countingReader{Reader: e.reader}
	s := &InventoryStore{Client: e.admin, Reader: reader, Namespace: "default", Log: testr.New(t)}
	key := func(name string) render.ObjectKey {
		return render.ObjectKey{Kind: "ConfigMap", Namespace: "shop", Name: name}
	}
	var guards []v1alpha1.Guard
	// Created a second apart (creation times have whole seconds), the
	// older one with the later name.
	for _, name := range []string{"zeta", "alpha", "mid"} {
		g := v1alpha1.Guard{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: v1alpha1.GuardSpec{Git: &v1alpha1.GitSource{URL: "http://127.0.0.1:1/x.git"}}}
		if err := e.admin.Create(ctx, &g); err != nil {
			t.Fatal(err)
		}
		inv, err := s.Load(ctx, &g)
		if err != nil {
			t.Fatal(err)
		}
		inv.Put(key("shared"), "v1", "uid-shared")
		inv.Put(key("of-"+name), "v1", types.UID("uid-"+name))
		if err := s.Save(ctx, &g, inv); err != nil {
			t.Fatal(err)
		}
		guards = append(guards, g)
		time.Sleep(1100 * time.Millisecond)
	}
	// An inventory of "mid" that "mid" does not own: not read.
	var real corev1.ConfigMap
	if err := e.admin.Get(ctx, client.ObjectKey{Namespace: "default", Name: InventoryName("alpha")}, &real); err != nil {
		t.Fatal(err)
	}
	forged := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: InventoryName("ghost"),
		Labels: map[string]string{InventoryOfLabel: "mid"}, OwnerReferences: real.OwnerReferences}, BinaryData: real.BinaryData}
	if err := e.admin.Create(ctx, forged); err != nil {
		t.Fatal(err)
	}

	got, err := s.Holdings(ctx, guards)
	if err != nil {
		t.Fatal(err)
	}
	var order []string
	for _, h := range got {
		order = append(order, h.Guard)
		if !slices.Contains(h.Keys, key("shared")) || !slices.Contains(h.Keys, key("of-"+h.Guard)) || len(h.Keys) != 2 {
			t.Errorf("%s holds %v", h.Guard, h.Keys)
		}
	}
	if !slices.Equal(order, []string{"zeta", "alpha", "mid"}) {
		t.Errorf("holdings in the order %v, want the oldest Guard first: zeta, alpha, mid", order)
	}
	if n := reader.take(""); n != 2 { // a typed list names no kind
		t.Errorf("%d lists of four ConfigMaps, two a page; want 2", n)
	}

	// A replica elected after a follower reserved them forgets the Guard
	// deleted meanwhile (never reconciled there), and only it.
	store := render.NewStore()
	if err := store.Reserve(func() ([]render.Holding, error) { return got, nil }); err != nil {
		t.Fatal(err)
	}
	if err := e.admin.Delete(ctx, &guards[2]); err != nil {
		t.Fatal(err)
	}
	r := &GuardReconciler{Client: e.admin, Store: store, Log: testr.New(t)}
	if err := r.forgetGone(ctx); err != nil {
		t.Fatal(err)
	}
	if held := store.Guards(); !slices.Equal(held, []string{"alpha", "zeta"}) {
		t.Errorf("the store holds %v after the election, want alpha and zeta (mid deleted)", held)
	}
	if owner := store.Owner(key("of-mid")); owner != "" {
		t.Errorf("the deleted Guard's object is still owned by %q", owner)
	}
}

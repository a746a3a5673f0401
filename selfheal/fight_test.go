package selfheal

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

func TestFights(t *testing.T) {
	const op = "system:serviceaccount:operators:my-operator"
	it := item{gvk: schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"}, namespace: "shop", name: "web"}
	t0 := time.Now()
	tests := []struct {
		name    string
		manager string
		every   time.Duration
		n       int
		fight   bool
		varying bool // different values each time
	}{
		{"controller reverted often", op, time.Second, fightLimit + 1, true, false},
		{"controller reverted at the limit", op, time.Second, fightLimit, false, false},
		{"spread beyond the window", op, fightWindow / 2, fightLimit + 3, false, false},
		{"no controller (a person, an unverified writer) never", "", time.Second, 3 * fightLimit, false, false},
		{"different values each time are no fight", op, time.Second, 3 * fightLimit, false, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFights()
			started := false
			for i := range tt.n {
				changes := "/spec/replicas=5;"
				if tt.varying {
					changes = fmt.Sprintf("/data/value=%d;", i)
				}
				if f.reverted(it, tt.manager, changes, "shop", t0.Add(time.Duration(i)*tt.every)) {
					started = true
				}
			}
			if started != tt.fight || (tt.manager != "" && f.allow(it, tt.manager) == tt.fight) {
				t.Fatalf("fight = %v (allow %v), want %v", started, f.allow(it, tt.manager), tt.fight)
			}
			if tt.fight {
				msgs := f.of("shop")
				if len(msgs) != 1 || !strings.Contains(msgs[0], tt.manager) || !strings.Contains(msgs[0], "managedFieldsManagers") {
					t.Fatalf("fight message must name the manager and the rule: %v", msgs)
				}
				f.forget(it)
				if !f.allow(it, tt.manager) {
					t.Fatal("forget must end the fight")
				}
			}
		})
	}
}

// TestFightCountsExpire: a manager that writes a new value every time adds
// one count per revert; counts older than the window are dropped, so the
// map stays as large as one window of reverts.
func TestFightCountsExpire(t *testing.T) {
	it := item{gvk: schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}, namespace: "shop", name: "web"}
	f := newFights()
	t0 := time.Now()
	perWindow := 0
	for i := range 1000 {
		at := t0.Add(time.Duration(i) * fightWindow / 100) // 100 reverts a window, 10 windows
		f.reverted(it, "load-test", fmt.Sprintf("/data/value=%d;", i), "shop", at)
		perWindow = max(perWindow, len(f.reverts))
	}
	if perWindow > 200 {
		t.Fatalf("%d counts kept at once for 100 reverts a window: old counts are not dropped", perWindow)
	}
	f.reverted(it, "load-test", "/data/value=last;", "shop", t0.Add(20*fightWindow))
	if len(f.reverts) != 1 {
		t.Fatalf("%d counts kept after a quiet window, want 1", len(f.reverts))
	}
}

// TestFightsOfDeletedGuards: when a Guard is gone from the store, its
// fights end and its driftguard_fights series goes, whether a fight was
// still going on or had ended; the series of a Guard that stays, stays.
func TestFightsOfDeletedGuards(t *testing.T) {
	const op = "system:serviceaccount:operators:my-operator"
	t0 := time.Now()
	f := newFights()
	fight := func(guard string) item {
		it := item{gvk: schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}, namespace: "shop", name: guard}
		for i := range fightLimit + 1 {
			f.reverted(it, op, "/data/value=1;", guard, t0.Add(time.Duration(i)*time.Second))
		}
		if f.allow(it, op) {
			t.Fatalf("%s: no fight started", guard)
		}
		return it
	}
	kept := fight("fights-kept")
	deleted := fight("fights-deleted")
	ended := fight("fights-ended-then-deleted")
	f.forget(ended)

	f.forgetGuards(func(guard string) bool { return guard == "fights-kept" })
	for _, tt := range []struct {
		guard      string
		it         item
		wantSeries bool
		wantFight  bool
	}{
		{"fights-kept", kept, true, true},
		{"fights-deleted", deleted, false, false},
		{"fights-ended-then-deleted", ended, false, false},
	} {
		t.Run(tt.guard, func(t *testing.T) {
			if has := hasFightsSeries(t, tt.guard); has != tt.wantSeries {
				t.Errorf("driftguard_fights{guard=%q} present %v, want %v", tt.guard, has, tt.wantSeries)
			}
			if fighting := !f.allow(tt.it, op); fighting != tt.wantFight {
				t.Errorf("fight going on %v, want %v", fighting, tt.wantFight)
			}
		})
	}
}

// hasFightsSeries reports whether driftguard_fights has a series of guard.
func hasFightsSeries(t *testing.T, guard string) bool {
	t.Helper()
	ch := make(chan prometheus.Metric, 64)
	go func() { fightsGauge.Collect(ch); close(ch) }()
	found := false
	for m := range ch {
		var d dto.Metric
		if err := m.Write(&d); err != nil {
			t.Fatal(err)
		}
		for _, l := range d.GetLabel() {
			if l.GetName() == "guard" && l.GetValue() == guard {
				found = true
			}
		}
	}
	return found
}

// TestController: only a verified service account of another namespace
// counts as a controller a fight can be detected against.
func TestController(t *testing.T) {
	tests := []struct {
		name string
		who  attribution
		want string
	}{
		{"verified operator of another namespace", attribution{user: "system:serviceaccount:ops:op", verified: true}, "system:serviceaccount:ops:op"},
		{"account of the object's own namespace", attribution{user: "system:serviceaccount:shop:x", verified: true}, ""},
		{"a person", attribution{user: "alice", verified: true}, ""},
		{"unverified", attribution{user: "system:serviceaccount:ops:op", manager: "op"}, ""},
		{"unknown with a forged manager name", attribution{user: "unknown", manager: "kube-controller-manager"}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.who.controller("shop"); got != tt.want {
				t.Fatalf("controller = %q, want %q", got, tt.want)
			}
		})
	}
}

package informer

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"
)

func TestFights(t *testing.T) {
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
		{"controller reverted often", "my-operator", time.Second, fightLimit + 1, true, false},
		{"controller reverted at the limit", "my-operator", time.Second, fightLimit, false, false},
		{"spread beyond the window", "my-operator", fightWindow / 2, fightLimit + 3, false, false},
		{"a person with kubectl never", "kubectl-patch", time.Second, 3 * fightLimit, false, false},
		{"unknown manager never", "unknown", time.Second, 3 * fightLimit, false, false},
		{"different values each time are no fight", "load-test", time.Second, 3 * fightLimit, false, true},
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
			if started != tt.fight || f.allow(it, tt.manager) == tt.fight {
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

package informer

import (
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
	}{
		{"controller reverted often", "my-operator", time.Second, fightLimit + 1, true},
		{"controller reverted at the limit", "my-operator", time.Second, fightLimit, false},
		{"spread beyond the window", "my-operator", fightWindow / 2, fightLimit + 3, false},
		{"a person with kubectl never", "kubectl-patch", time.Second, 3 * fightLimit, false},
		{"unknown manager never", "unknown", time.Second, 3 * fightLimit, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFights()
			started := false
			for i := range tt.n {
				if f.reverted(it, tt.manager, "shop", t0.Add(time.Duration(i)*tt.every)) {
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

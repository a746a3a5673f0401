package reconcile

import (
	"reflect"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/driftguard/driftguard/render"
)

var cmGVK = schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}

func cm(name string, uid types.UID) labelled {
	return labelled{GVK: cmGVK, Key: key("", "ConfigMap", "team", name), UID: uid}
}

func TestPlanPrune(t *testing.T) {
	inGit := func(k render.ObjectKey) bool { return k.Name == "in-git" }
	inv := inventoryOf(map[render.ObjectKey]InventoryItem{
		key("", "ConfigMap", "team", "in-git"):    {"v1", "u-git", 0},
		key("", "ConfigMap", "team", "applied"):   {"v1", "u-applied", 0},
		key("", "ConfigMap", "team", "recreated"): {"v1", "u-old", 0},
		key("", "ConfigMap", "team", "deleting"):  {"v1", "u-deleting", 0},
	})
	deleting := cm("deleting", "u-deleting")
	deleting.Deleting = true
	tests := []struct {
		name     string
		item     labelled
		wantDel  bool
		wantKeep string // a word of the reason
		wantDrop bool
	}{
		{"in Git: left alone", cm("in-git", "u-git"), false, "", false},
		{"in Git, not in the inventory: left alone (apply takes it over)", cm("in-git", "u-other"), false, "", false},
		{"applied by the guard and left Git: deleted", cm("applied", "u-applied"), true, "", false},
		{"labelled by someone, never applied: kept", cm("stranger", "u-stranger"), false, "not in the Guard's inventory", false},
		{"same name re-created by someone: kept, entry dropped", cm("recreated", "u-new"), false, "not the object the guard applied", true},
		{"being deleted already: left alone", deleting, false, "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := planPrune("shop", []labelled{tt.item}, inGit, inv)
			if got := len(p.Delete) == 1; got != tt.wantDel || len(p.Delete) > 1 {
				t.Errorf("Delete = %v, want deleted %v", p.Delete, tt.wantDel)
			}
			if tt.wantKeep == "" && len(p.Keep) > 0 {
				t.Errorf("Keep = %v, want none", p.Keep)
			}
			if tt.wantKeep != "" {
				if len(p.Keep) != 1 || !strings.Contains(p.Keep[0].Reason, tt.wantKeep) || !strings.Contains(p.Keep[0].Reason, "driftguard.io/guard=shop") ||
					p.Keep[0].Key != tt.item.Key || p.Keep[0].UID != tt.item.UID {
					t.Errorf("Keep = %+v, want %s kept because %q", p.Keep, tt.item.Key, tt.wantKeep)
				}
			}
			if got := len(p.Drop) == 1 && p.Drop[0] == tt.item.Key; got != tt.wantDrop {
				t.Errorf("Drop = %v, want dropped %v", p.Drop, tt.wantDrop)
			}
		})
	}
}

// TestPlanPruneEmptyInventory: a Guard without an inventory yet (installed
// before inventories) deletes nothing, whatever carries its label.
func TestPlanPruneEmptyInventory(t *testing.T) {
	p := planPrune("shop", []labelled{cm("a", "1"), cm("b", "2")}, func(render.ObjectKey) bool { return false }, NewInventory())
	if len(p.Delete) != 0 || len(p.Keep) != 2 {
		t.Fatalf("plan %+v: want nothing deleted and both kept", p)
	}
}

func TestGoneFromInventory(t *testing.T) {
	inv := inventoryOf(map[render.ObjectKey]InventoryItem{
		key("", "ConfigMap", "team", "in-git"): {"v1", "1", 0},
		key("", "ConfigMap", "team", "listed"): {"v1", "2", 0},
		key("", "ConfigMap", "team", "gone"):   {"v1", "3", 0},
		key("apps", "Deployment", "team", "x"): {"v1", "4", 0},
		key("example.com", "Widget", "", "w"):  {"v1", "5", 0},
	})
	inGit := func(k render.ObjectKey) bool { return k.Name == "in-git" }
	tests := []struct {
		name   string
		listed map[groupKind]bool
		want   []render.ObjectKey
	}{
		{"no list answered: nothing dropped", nil, nil},
		{"ConfigMaps listed: the one not found is dropped, not the one in Git", map[groupKind]bool{{"", "ConfigMap"}: true},
			[]render.ObjectKey{key("", "ConfigMap", "team", "gone")}},
		{"every kind listed (Widget's kind gone)", map[groupKind]bool{{"", "ConfigMap"}: true, {"apps", "Deployment"}: true, {"example.com", "Widget"}: true},
			[]render.ObjectKey{key("", "ConfigMap", "team", "gone"), key("apps", "Deployment", "team", "x"), key("example.com", "Widget", "", "w")}},
	}
	found := map[render.ObjectKey]bool{key("", "ConfigMap", "team", "listed"): true, key("", "ConfigMap", "team", "in-git"): true}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := goneFromInventory(inv, inGit, tt.listed, found); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got %v, want %v", got, tt.want)
			}
		})
	}
}

func TestPruneKindsLateAndFromInventory(t *testing.T) {
	ns := schema.GroupVersionKind{Version: "v1", Kind: "Namespace"}
	crd := schema.GroupVersionKind{Group: "apiextensions.k8s.io", Version: "v1", Kind: "CustomResourceDefinition"}
	deploy := schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"}
	inv := inventoryOf(map[render.ObjectKey]InventoryItem{
		key("apps", "Deployment", "a", "x"): {"v1", "1", 0},
		key("", "ConfigMap", "a", "c"):      {"v1", "2", 0},
	})
	got := pruneKinds([]schema.GroupVersionKind{ns, crd, cmGVK}, inv)
	want := []schema.GroupVersionKind{cmGVK, deploy, ns, crd}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("pruneKinds = %v, want %v", got, want)
	}
}

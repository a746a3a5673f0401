package reconcile

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/uuid"

	"github.com/driftguard/driftguard/render"
)

func key(group, kind, ns, name string) render.ObjectKey {
	return render.ObjectKey{Group: group, Kind: kind, Namespace: ns, Name: name}
}

func inventoryOf(entries map[render.ObjectKey]InventoryItem) *Inventory {
	inv := NewInventory()
	for k, it := range entries {
		inv.Put(k, it.Version, it.UID)
		inv.items[k] = it // and its wave
	}
	inv.changed = false
	return inv
}

func TestInventoryRoundTrip(t *testing.T) {
	tests := []struct {
		name    string
		entries map[render.ObjectKey]InventoryItem
	}{
		{"empty", nil},
		{"one namespaced object", map[render.ObjectKey]InventoryItem{
			key("", "ConfigMap", "shop", "cfg"): {"v1", "u-1", 0},
		}},
		{"cluster-scoped and namespaced, several kinds", map[render.ObjectKey]InventoryItem{
			key("", "Namespace", "", "shop"):                                             {"v1", "u-ns", 0},
			key("apps", "Deployment", "shop", "web"):                                     {"v1", "u-web", 0},
			key("apps", "Deployment", "shop", "api"):                                     {"v1", "u-api", 0},
			key("apiextensions.k8s.io", "CustomResourceDefinition", "", "w.example.com"): {"v1", "u-crd", 0},
			key("example.com", "Widget", "shop", "w"):                                    {"v1beta1", "u-w", 0},
		}},
		{"objects of sync waves, negative and positive", map[render.ObjectKey]InventoryItem{
			key("apps", "Deployment", "shop", "db"):  {"v1", "u-db", -2},
			key("apps", "Deployment", "shop", "web"): {"v1", "u-web", 3},
			key("", "Service", "shop", "web"):        {"v1", "u-svc", 0},
		}},
		{"one kind at two versions", map[render.ObjectKey]InventoryItem{
			key("example.com", "Widget", "a", "x"): {"v1", "u-x", 0},
			key("example.com", "Widget", "b", "y"): {"v2", "u-y", 0},
			key("example.com", "Widget", "c", "z"): {"v1", "u-z", 0},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			inv := inventoryOf(tt.entries)
			data, err := encodeInventory(inv)
			if err != nil {
				t.Fatal(err)
			}
			again, err := encodeInventory(inventoryOf(tt.entries))
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(data, again) {
				t.Error("the same inventory encoded to different bytes")
			}
			got, err := decodeInventory(data)
			if err != nil {
				t.Fatal(err)
			}
			if got.Changed() {
				t.Error("a decoded inventory is changed")
			}
			want := tt.entries
			if want == nil {
				want = map[render.ObjectKey]InventoryItem{}
			}
			if !reflect.DeepEqual(got.items, want) {
				t.Errorf("decoded %v, want %v", got.items, want)
			}
		})
	}
}

func gz(t *testing.T, s string) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	if _, err := zw.Write([]byte(s)); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func TestDecodeInventoryRefuses(t *testing.T) {
	tests := []struct {
		name string
		data []byte
		want string
	}{
		{"not gzip", []byte(`{"format":1}`), "gzip"},
		{"not JSON", gz(t, "kinds: []"), "invalid character"},
		{"another format", gz(t, `{"format":2,"kinds":[]}`), "format 2"},
		{"no format", gz(t, `{"kinds":[]}`), "format 0"},
		{"kind without version", gz(t, `{"format":1,"kinds":[{"kind":"ConfigMap","objects":[["a","b","c"]]}]}`), "without kind or version"},
		{"object without uid", gz(t, `{"format":1,"kinds":[{"version":"v1","kind":"ConfigMap","objects":[["a","b",""]]}]}`), "without name or uid"},
		{"object without name", gz(t, `{"format":1,"kinds":[{"version":"v1","kind":"ConfigMap","objects":[["a","","u"]]}]}`), "without name or uid"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := decodeInventory(tt.data)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error %v, want one containing %q", err, tt.want)
			}
		})
	}
}

func TestInventoryChanged(t *testing.T) {
	k := key("", "ConfigMap", "a", "b")
	tests := []struct {
		name string
		do   func(inv *Inventory)
		want bool
	}{
		{"nothing", func(*Inventory) {}, false},
		{"the same entry again", func(inv *Inventory) { inv.Put(k, "v1", "u1") }, false},
		{"an empty UID records nothing", func(inv *Inventory) { inv.Put(key("", "ConfigMap", "a", "c"), "v1", "") }, false},
		{"removing what is not there", func(inv *Inventory) { inv.Remove(key("", "ConfigMap", "a", "c")) }, false},
		{"a new UID", func(inv *Inventory) { inv.Put(k, "v1", "u2") }, true},
		{"a new version", func(inv *Inventory) { inv.Put(k, "v2", "u1") }, true},
		{"a new object", func(inv *Inventory) { inv.Put(key("", "ConfigMap", "a", "c"), "v1", "u3") }, true},
		{"removed", func(inv *Inventory) { inv.Remove(k) }, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			stored := inventoryOf(map[render.ObjectKey]InventoryItem{k: {"v1", "u1", 0}})
			inv := stored.Clone()
			tt.do(inv)
			if inv.Changed() != tt.want {
				t.Errorf("Changed() = %v, want %v", inv.Changed(), tt.want)
			}
			if it, _ := stored.Get(k); it.UID != "u1" || stored.Len() != 1 {
				t.Error("changing a clone changed the original")
			}
		})
	}
}

func TestInventoryKinds(t *testing.T) {
	inv := inventoryOf(map[render.ObjectKey]InventoryItem{
		key("apps", "Deployment", "a", "x"): {"v1", "1", 0},
		key("apps", "Deployment", "b", "y"): {"v1", "2", 0},
		key("", "ConfigMap", "a", "x"):      {"v1", "3", 0},
		key("", "Namespace", "", "a"):       {"v1", "4", 0},
	})
	want := []schema.GroupVersionKind{{Version: "v1", Kind: "ConfigMap"}, {Version: "v1", Kind: "Namespace"}, {Group: "apps", Version: "v1", Kind: "Deployment"}}
	if got := inv.Kinds(); !reflect.DeepEqual(got, want) {
		t.Errorf("Kinds() = %v, want %v", got, want)
	}
}

// TestInventorySizeAtScale: the inventory of a Guard of 10,000 objects (random
// UIDs, which do not compress) fits a ConfigMap (1 MiB) several times over.
func TestInventorySizeAtScale(t *testing.T) {
	inv := NewInventory()
	kinds := []struct{ group, kind string }{{"", "ConfigMap"}, {"apps", "Deployment"}, {"", "Service"}, {"", "ServiceAccount"}}
	for i := range 10_000 {
		k := kinds[i%len(kinds)]
		inv.Put(key(k.group, k.kind, fmt.Sprintf("team-%03d", i%100), fmt.Sprintf("%s-object-%05d", strings.ToLower(k.kind), i)), "v1", uuid.NewUUID())
	}
	data, err := encodeInventory(inv)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("10,000 objects: %d bytes compressed", len(data))
	if len(data) > 512<<10 {
		t.Errorf("10,000 objects take %d bytes, more than half of a ConfigMap's 1 MiB", len(data))
	}
	got, err := decodeInventory(data)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got.items, inv.items) {
		t.Error("the decoded inventory differs")
	}
}

// The hooks the guard created are kept with their UIDs across a save, and a
// stored hook without one is refused rather than trusted.
func TestInventoryHooks(t *testing.T) {
	inv := NewInventory()
	k := render.ObjectKey{Group: "batch", Kind: "Job", Namespace: "shop", Name: "migrate"}
	inv.PutHook(k, "uid-1")
	if !inv.Changed() {
		t.Fatal("a new hook does not change the inventory")
	}
	data, err := encodeInventory(inv)
	if err != nil {
		t.Fatal(err)
	}
	back, err := decodeInventory(data)
	if err != nil {
		t.Fatal(err)
	}
	if uid, ok := back.HookUID(k); !ok || uid != "uid-1" {
		t.Fatalf("hook after a round trip: %q %v", uid, ok)
	}
	if c := back.Clone(); func() bool { _, ok := c.HookUID(k); return !ok }() {
		t.Fatal("Clone lost the hooks")
	}
	back.RemoveHook(k)
	if _, ok := back.HookUID(k); ok || !back.Changed() {
		t.Fatal("RemoveHook")
	}
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	_, _ = zw.Write([]byte(`{"format":` + strconv.Itoa(inventoryFormatVersion) + `,"kinds":[],"hooks":[["batch","Job","shop","migrate",""]]}`))
	_ = zw.Close()
	if _, err := decodeInventory(buf.Bytes()); err == nil {
		t.Fatal("a hook without a UID was read")
	}
}

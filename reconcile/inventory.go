package reconcile

import (
	"bytes"
	"cmp"
	"compress/gzip"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/driftguard/driftguard/render"
)

// Inventory is what one Guard applied: every object it wrote from Git (or
// found in sync and provably its own), with the UID the API server gave it.
// Prune deletes only objects of the inventory, and only while they still
// have that UID: a label anyone can set is never a reason to delete.
//
// An Inventory is not safe for concurrent use; the reconciler works on a
// Clone of the stored one and saves it when Changed.
type Inventory struct {
	items map[render.ObjectKey]InventoryItem
	// hooks are the named hooks the guard created, by UID: only those may
	// a later run delete (before-hook-creation), never an object someone
	// labelled as a hook.
	hooks   map[render.ObjectKey]types.UID
	changed bool
}

// InventoryItem is the version an object was applied at, its UID, and
// its sync wave (prune deletes the highest waves first).
type InventoryItem struct {
	Version string
	UID     types.UID
	Wave    int
}

// NewInventory returns an empty inventory.
func NewInventory() *Inventory {
	return &Inventory{items: map[render.ObjectKey]InventoryItem{}, hooks: map[render.ObjectKey]types.UID{}}
}

// PutHook records that the guard created the hook k with uid.
func (inv *Inventory) PutHook(k render.ObjectKey, uid types.UID) {
	if uid != "" && inv.hooks[k] != uid {
		inv.hooks[k], inv.changed = uid, true
	}
}

// HookUID is the UID of the hook k the guard created last, if any.
func (inv *Inventory) HookUID(k render.ObjectKey) (types.UID, bool) {
	uid, ok := inv.hooks[k]
	return uid, ok
}

// RemoveHook forgets the hook k (deleted).
func (inv *Inventory) RemoveHook(k render.ObjectKey) {
	if _, ok := inv.hooks[k]; ok {
		delete(inv.hooks, k)
		inv.changed = true
	}
}

// Len is the number of objects in the inventory.
func (inv *Inventory) Len() int { return len(inv.items) }

// Get returns the entry of an object.
func (inv *Inventory) Get(k render.ObjectKey) (InventoryItem, bool) {
	it, ok := inv.items[k]
	return it, ok
}

// Put records that the guard applied the object k at version with uid. An
// empty uid records nothing.
func (inv *Inventory) Put(k render.ObjectKey, version string, uid types.UID) {
	if uid == "" {
		return
	}
	it := InventoryItem{Version: version, UID: uid}
	old, ok := inv.items[k]
	if ok {
		it.Wave = old.Wave
	}
	if ok && old == it {
		return
	}
	inv.items[k] = it
	inv.changed = true
}

// SetWaves records the sync wave of each object of plan that the
// inventory holds, so that prune can delete in reverse wave order once Git
// no longer says it.
func (inv *Inventory) SetWaves(plan *SyncPlan) {
	if plan == nil {
		return
	}
	for _, w := range plan.Waves {
		if w.Definitions {
			continue // pruned last whatever their wave
		}
		for _, o := range w.Objects {
			if it, ok := inv.items[o.Key]; ok && it.Wave != w.Number {
				it.Wave = w.Number
				inv.items[o.Key] = it
				inv.changed = true
			}
		}
	}
}

// Remove drops an object from the inventory.
func (inv *Inventory) Remove(k render.ObjectKey) {
	if _, ok := inv.items[k]; ok {
		delete(inv.items, k)
		inv.changed = true
	}
}

// Changed reports whether Put or Remove changed the inventory since it was
// made (NewInventory, Clone, decodeInventory).
func (inv *Inventory) Changed() bool { return inv.changed }

// Clone returns a copy, not changed.
func (inv *Inventory) Clone() *Inventory {
	return &Inventory{items: maps.Clone(inv.items), hooks: maps.Clone(inv.hooks)}
}

// Keys returns the objects of the inventory, sorted.
func (inv *Inventory) Keys() []render.ObjectKey {
	keys := slices.Collect(maps.Keys(inv.items))
	slices.SortFunc(keys, compareKeys)
	return keys
}

// Kinds returns the distinct group/version/kinds of the inventory, sorted.
func (inv *Inventory) Kinds() []schema.GroupVersionKind {
	seen := map[schema.GroupVersionKind]bool{}
	var out []schema.GroupVersionKind
	for k, it := range inv.items {
		gvk := schema.GroupVersionKind{Group: k.Group, Version: it.Version, Kind: k.Kind}
		if !seen[gvk] {
			seen[gvk] = true
			out = append(out, gvk)
		}
	}
	slices.SortFunc(out, func(a, b schema.GroupVersionKind) int {
		return cmp.Or(cmp.Compare(a.Group, b.Group), cmp.Compare(a.Kind, b.Kind), cmp.Compare(a.Version, b.Version))
	})
	return out
}

func compareKeys(a, b render.ObjectKey) int {
	return cmp.Or(cmp.Compare(a.Group, b.Group), cmp.Compare(a.Kind, b.Kind), cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Name, b.Name))
}

// inventoryFormat is the stored form: objects grouped by kind, each object
// [namespace, name, uid], and its sync wave as a fourth element when it is
// not 0 (a reader of three elements ignores it). It is gzip-compressed; 10,000 objects take about
// 250 KiB (TestInventorySizeAtScale), well inside a ConfigMap's 1 MiB.
type inventoryFormat struct {
	// Format is inventoryFormatVersion; a stored inventory of another
	// format is refused rather than misread.
	Format int                   `json:"format"`
	Kinds  []inventoryFormatKind `json:"kinds"`
	// Hooks are [group, kind, namespace, name, uid] of the named hooks the
	// guard created (absent in inventories written before hooks).
	Hooks [][]string `json:"hooks,omitempty"`
}

type inventoryFormatKind struct {
	Group   string     `json:"group,omitempty"`
	Version string     `json:"version"`
	Kind    string     `json:"kind"`
	Objects [][]string `json:"objects"`
}

const inventoryFormatVersion = 1

// encodeInventory returns the gzip-compressed JSON of inv. The same
// inventory always encodes to the same bytes.
func encodeInventory(inv *Inventory) ([]byte, error) {
	f := inventoryFormat{Format: inventoryFormatVersion, Kinds: []inventoryFormatKind{}}
	var cur *inventoryFormatKind
	for _, k := range inv.Keys() {
		it := inv.items[k]
		if cur == nil || cur.Group != k.Group || cur.Kind != k.Kind || cur.Version != it.Version {
			f.Kinds = append(f.Kinds, inventoryFormatKind{Group: k.Group, Version: it.Version, Kind: k.Kind})
			cur = &f.Kinds[len(f.Kinds)-1]
		}
		o := []string{k.Namespace, k.Name, string(it.UID)}
		if it.Wave != 0 {
			o = append(o, strconv.Itoa(it.Wave))
		}
		cur.Objects = append(cur.Objects, o)
	}
	for _, k := range slices.SortedFunc(maps.Keys(inv.hooks), compareKeys) {
		f.Hooks = append(f.Hooks, []string{k.Group, k.Kind, k.Namespace, k.Name, string(inv.hooks[k])})
	}
	// Keys sort by group, kind, namespace, name: one kind with two
	// versions may come out as several runs; that decodes the same.
	var buf bytes.Buffer
	zw, err := gzip.NewWriterLevel(&buf, gzip.BestCompression)
	if err != nil {
		return nil, fmt.Errorf("encode inventory: %w", err)
	}
	if err := json.NewEncoder(zw).Encode(f); err != nil {
		return nil, fmt.Errorf("encode inventory: %w", err)
	}
	if err := zw.Close(); err != nil {
		return nil, fmt.Errorf("encode inventory: %w", err)
	}
	return buf.Bytes(), nil
}

// maxInventoryJSON bounds what decodeInventory inflates (a ConfigMap holds
// at most 1 MiB compressed; JSON of this kind compresses about 3:1).
const maxInventoryJSON = 64 << 20

// decodeInventory reads what encodeInventory wrote.
func decodeInventory(data []byte) (*Inventory, error) {
	zr, err := gzip.NewReader(bytes.NewReader(data))
	if err != nil {
		return nil, fmt.Errorf("decode inventory: %w", err)
	}
	raw, err := io.ReadAll(io.LimitReader(zr, maxInventoryJSON+1))
	if err != nil {
		return nil, fmt.Errorf("decode inventory: %w", err)
	}
	if len(raw) > maxInventoryJSON {
		return nil, fmt.Errorf("decode inventory: more than %d bytes of JSON", maxInventoryJSON)
	}
	var f inventoryFormat
	if err := json.Unmarshal(raw, &f); err != nil {
		return nil, fmt.Errorf("decode inventory: %w", err)
	}
	if f.Format != inventoryFormatVersion {
		return nil, fmt.Errorf("decode inventory: format %d, this guard reads format %d", f.Format, inventoryFormatVersion)
	}
	inv := NewInventory()
	for _, kind := range f.Kinds {
		if kind.Kind == "" || kind.Version == "" {
			return nil, errors.New("decode inventory: a kind without kind or version")
		}
		for _, o := range kind.Objects {
			if len(o) < 3 || o[1] == "" || o[2] == "" {
				return nil, fmt.Errorf("decode inventory: a %s without name or uid", kind.Kind)
			}
			it := InventoryItem{Version: kind.Version, UID: types.UID(o[2])}
			if len(o) > 3 {
				w, err := strconv.Atoi(o[3])
				if err != nil {
					return nil, fmt.Errorf("decode inventory: %s %s/%s: sync wave %q: %w", kind.Kind, o[0], o[1], o[3], err)
				}
				it.Wave = w
			}
			inv.items[render.ObjectKey{Group: kind.Group, Kind: kind.Kind, Namespace: o[0], Name: o[1]}] = it
		}
	}
	for _, h := range f.Hooks {
		if len(h) != 5 || h[1] == "" || h[3] == "" || h[4] == "" {
			return nil, errors.New("decode inventory: a hook without kind, name or uid")
		}
		inv.hooks[render.ObjectKey{Group: h[0], Kind: h[1], Namespace: h[2], Name: h[3]}] = types.UID(h[4])
	}
	return inv, nil
}

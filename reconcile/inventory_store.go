package reconcile

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/driftguard/driftguard/api/v1alpha1"
	"github.com/driftguard/driftguard/apply"
	"github.com/driftguard/driftguard/render"
)

// Where and how a Guard's inventory is stored.
const (
	// InventoryPrefix starts the name of the ConfigMap holding a Guard's
	// inventory, in the guard's own namespace: driftguard-inventory-<guard>.
	InventoryPrefix = "driftguard-inventory-"
	// InventoryKey is the binaryData key of the gzip-compressed JSON.
	InventoryKey = "inventory.json.gz"
	// InventoryOfLabel names the Guard an inventory ConfigMap belongs to.
	InventoryOfLabel = "driftguard.io/inventory-of"
	// InventoryObjectsAnnotation counts the objects of a stored inventory,
	// for people.
	InventoryObjectsAnnotation = "driftguard.io/inventory-objects"
)

// InventoryName is the name of the ConfigMap of a Guard's inventory.
func InventoryName(guard string) string { return InventoryPrefix + guard }

// InventoryStore keeps each Guard's Inventory in a ConfigMap of the guard's
// own namespace (gzip-compressed JSON in binaryData), so that it survives
// restarts and leader changes, and the last one loaded or saved in memory,
// so that a reconcile that changes nothing reads and writes nothing.
//
// A ConfigMap rather than the Guard's status: an inventory of 10,000
// objects is about 1.4 MB of JSON, close to etcd's 1.5 MiB object limit, and
// the status is patched often (drift counts) and read by every client of
// Guards; compressed in a ConfigMap it is about 250 KiB, written only when
// it changes and read only by the guard. The ConfigMap is owned by the
// Guard (an ownerReference), so it goes when the Guard goes.
//
// It also collects, between reconciles, the UIDs the API server answered to
// the guard's own applies outside a full reconcile (self-heal reverts and
// re-creations, through Applied), for the next reconcile to record.
type InventoryStore struct {
	// Client reads and writes the ConfigMaps straight from the API server
	// (the guard's client caches no ConfigMaps).
	Client client.Client
	// Reader, when set, lists them for Holdings, a page at a time
	// (mgr.GetAPIReader(): a cache serves no pages); unset, Client does.
	Reader client.Reader
	// Namespace is the guard's own namespace.
	Namespace string
	Log       logr.Logger

	mu      sync.Mutex
	stored  map[string]storedInventory                    // guard -> last loaded or saved
	applied map[string]map[render.ObjectKey]InventoryItem // guard -> answers to applies not taken yet
}

// storedInventory is a Guard's inventory as it is in the ConfigMap.
type storedInventory struct {
	guardUID        types.UID
	inv             *Inventory
	resourceVersion string // "" while the ConfigMap does not exist
}

// Load returns a copy of the Guard's inventory to work on: the one in
// memory, or the one stored in its ConfigMap. A Guard with no inventory
// yet (a new one, or one from before inventories) gets an empty one. An
// inventory stored for an earlier Guard of the same name (another UID) is
// not used.
func (s *InventoryStore) Load(ctx context.Context, g *v1alpha1.Guard) (*Inventory, error) {
	s.mu.Lock()
	st, ok := s.stored[g.Name]
	s.mu.Unlock()
	if ok && st.guardUID == g.UID {
		return st.inv.Clone(), nil
	}
	st = storedInventory{guardUID: g.UID, inv: NewInventory()}
	var cm corev1.ConfigMap
	err := s.Client.Get(ctx, client.ObjectKey{Namespace: s.Namespace, Name: InventoryName(g.Name)}, &cm)
	switch {
	case apierrors.IsNotFound(err):
	case err != nil:
		return nil, fmt.Errorf("read inventory %s/%s: %w", s.Namespace, InventoryName(g.Name), err)
	default:
		st.resourceVersion = cm.ResourceVersion
		if owner := guardOwner(&cm, g.Name); owner != g.UID {
			s.Log.Info("inventory of an earlier Guard of the same name is not used", "guard", g.Name, "configMap", cm.Name, "ownerUID", owner)
			break
		}
		inv, err := decodeInventory(cm.BinaryData[InventoryKey])
		if err != nil {
			return nil, fmt.Errorf("inventory %s/%s: %w (delete it to start a new inventory: objects that left Git are then reported, not pruned)", s.Namespace, cm.Name, err)
		}
		st.inv = inv
	}
	s.mu.Lock()
	if s.stored == nil {
		s.stored = map[string]storedInventory{}
	}
	s.stored[g.Name] = st
	s.mu.Unlock()
	return st.inv.Clone(), nil
}

// Holdings reads every inventory of the Guards given, a page of the
// guard's namespace at a time, and returns what each holds
// (render.Store.Reserve), the oldest Guard first: of two Guards whose
// inventories hold one object, the one created first keeps it (a name is
// chosen by whoever creates the Guard; its age is not). A ConfigMap is
// taken for a Guard only when that Guard, by UID, owns it: the
// inventories are written by the guard alone, in its own namespace, so
// nothing a Guard's Git or a namespace's editor writes can make a Guard
// the holder of an object. An inventory that cannot be read is left out
// (its Guard's reconcile reports it).
func (s *InventoryStore) Holdings(ctx context.Context, guards []v1alpha1.Guard) ([]render.Holding, error) {
	byName := make(map[string]*v1alpha1.Guard, len(guards))
	for i := range guards {
		byName[guards[i].Name] = &guards[i]
	}
	held := map[string][]render.ObjectKey{}
	opts := []client.ListOption{client.InNamespace(s.Namespace), client.HasLabels{InventoryOfLabel}, client.Limit(holdingsPage)}
	for {
		var list corev1.ConfigMapList
		var reader client.Reader = s.Client
		if s.Reader != nil {
			reader = s.Reader
		}
		if err := reader.List(ctx, &list, opts...); err != nil {
			return nil, fmt.Errorf("list the inventories in %s: %w", s.Namespace, err)
		}
		for i := range list.Items {
			cm := &list.Items[i]
			name := cm.Labels[InventoryOfLabel]
			g := byName[name]
			if g == nil || cm.Name != InventoryName(name) || guardOwner(cm, name) != g.UID {
				continue
			}
			inv, err := decodeInventory(cm.BinaryData[InventoryKey])
			if err != nil {
				s.Log.Info("inventory not read for the Guards' claims", "guard", name, "configMap", cm.Name, "error", err.Error())
				continue
			}
			held[name] = inv.Keys()
		}
		if list.Continue == "" {
			break
		}
		opts = append(opts[:3:3], client.Continue(list.Continue))
	}
	out := make([]render.Holding, 0, len(held))
	for name, keys := range held {
		out = append(out, render.Holding{Guard: name, Keys: keys})
	}
	slices.SortFunc(out, func(a, b render.Holding) int {
		ga, gb := byName[a.Guard], byName[b.Guard]
		if c := ga.CreationTimestamp.Compare(gb.CreationTimestamp.Time); c != 0 {
			return c
		}
		return strings.Compare(a.Guard, b.Guard)
	})
	return out, nil
}

// reserveHoldings claims in store, once in its life, what each Guard of
// shard applied before (render.Store.Reserve), Guards being deleted left
// out; guards is asked for the Guards only while nothing is reserved.
func reserveHoldings(ctx context.Context, store *render.Store, inv *InventoryStore, shard string, guards func() ([]v1alpha1.Guard, error)) error {
	return store.Reserve(func() ([]render.Holding, error) {
		all, err := guards()
		if err != nil {
			return nil, fmt.Errorf("list guards: %w", err)
		}
		own := slices.DeleteFunc(slices.Clone(all), func(g v1alpha1.Guard) bool { return !inShard(&g, shard) || !g.DeletionTimestamp.IsZero() })
		return inv.Holdings(ctx, own)
	})
}

// holdingsPage is how many inventories Holdings reads a request (each up
// to about 250 KiB compressed).
var holdingsPage int64 = 100

// Save stores inv as the Guard's inventory when it changed since Load (or
// the last Save). A ConfigMap changed by someone else meanwhile is not
// overwritten: the error makes the reconcile try again from what is stored.
func (s *InventoryStore) Save(ctx context.Context, g *v1alpha1.Guard, inv *Inventory) error {
	if !inv.Changed() {
		return nil
	}
	s.mu.Lock()
	st, ok := s.stored[g.Name]
	s.mu.Unlock()
	if !ok || st.guardUID != g.UID {
		return fmt.Errorf("save inventory of guard %s: it was not loaded", g.Name)
	}
	data, err := encodeInventory(inv)
	if err != nil {
		return err
	}
	cm := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: s.Namespace, Name: InventoryName(g.Name), ResourceVersion: st.resourceVersion,
			Labels:      map[string]string{"app.kubernetes.io/managed-by": apply.FieldManager, InventoryOfLabel: g.Name},
			Annotations: map[string]string{InventoryObjectsAnnotation: strconv.Itoa(inv.Len())},
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion: v1alpha1.GroupVersion.String(), Kind: "Guard", Name: g.Name, UID: g.UID,
			}},
		},
		BinaryData: map[string][]byte{InventoryKey: data},
	}
	if st.resourceVersion == "" {
		err = s.create(ctx, cm)
	} else {
		err = s.Client.Update(ctx, cm, client.FieldOwner(apply.FieldManager))
	}
	if err != nil {
		s.forgetStored(g.Name)
		return fmt.Errorf("save inventory %s/%s (%d objects, %d bytes): %w", s.Namespace, cm.Name, inv.Len(), len(data), err)
	}
	inv.changed = false
	s.mu.Lock()
	s.stored[g.Name] = storedInventory{guardUID: g.UID, inv: inv.Clone(), resourceVersion: cm.ResourceVersion}
	s.mu.Unlock()
	return nil
}

// create creates the ConfigMap. The guard's namespace exists where the
// guard runs in a cluster; run outside one (driftguard dev, the tests) it is
// created when missing.
func (s *InventoryStore) create(ctx context.Context, cm *corev1.ConfigMap) error {
	err := s.Client.Create(ctx, cm, client.FieldOwner(apply.FieldManager))
	if !apierrors.IsNotFound(err) {
		return err
	}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: s.Namespace}}
	if err := s.Client.Create(ctx, ns, client.FieldOwner(apply.FieldManager)); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create the guard's namespace %s: %w", s.Namespace, err)
	}
	s.Log.Info("created the guard's own namespace for its inventories", "namespace", s.Namespace)
	return s.Client.Create(ctx, cm, client.FieldOwner(apply.FieldManager))
}

// Applied records the UID of an object the API server stored for one of the
// guard's own applies (apply.Applier.Applied), under the Guard named by the
// object's label, for the next reconcile of that Guard to record: the UID
// the server answered to the guard itself is the inventory's first source.
func (s *InventoryStore) Applied(u *unstructured.Unstructured) {
	guard := u.GetLabels()[apply.GuardLabel]
	if guard == "" || u.GetUID() == "" {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.applied == nil {
		s.applied = map[string]map[render.ObjectKey]InventoryItem{}
	}
	m := s.applied[guard]
	if m == nil {
		m = map[render.ObjectKey]InventoryItem{}
		s.applied[guard] = m
	}
	m[render.KeyOf(u)] = InventoryItem{Version: u.GroupVersionKind().Version, UID: u.GetUID()}
}

// takeApplied returns the applies recorded for a Guard since the last call,
// and forgets them.
func (s *InventoryStore) takeApplied(guard string) map[render.ObjectKey]InventoryItem {
	s.mu.Lock()
	defer s.mu.Unlock()
	m := s.applied[guard]
	delete(s.applied, guard)
	return m
}

// Forget drops what is in memory of a Guard (deleted, or no longer this
// process's). Its ConfigMap stays until its owner, the Guard, is gone.
func (s *InventoryStore) Forget(guard string) {
	s.forgetStored(guard)
	s.mu.Lock()
	delete(s.applied, guard)
	s.mu.Unlock()
}

func (s *InventoryStore) forgetStored(guard string) {
	s.mu.Lock()
	delete(s.stored, guard)
	s.mu.Unlock()
}

// guardOwner returns the UID of the Guard named guard among the owners of cm.
func guardOwner(cm *corev1.ConfigMap, guard string) types.UID {
	for _, o := range cm.OwnerReferences {
		if o.Kind == "Guard" && o.Name == guard && o.APIVersion == v1alpha1.GroupVersion.String() {
			return o.UID
		}
	}
	return ""
}

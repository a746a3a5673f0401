package render

import (
	"maps"
	"slices"
	"sort"
	"sync"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/driftguard/driftguard/redact"
)

// Store holds the last good Snapshot of every Guard and an index from
// object key to the Guard that owns it. It is safe for concurrent use;
// Lookup takes a read lock and one map access.
//
// When two Guards claim the same key, the Guard that claimed it first keeps
// it until its own snapshot drops the key or it is removed; then the next
// claimant, in claim order, takes over. Conflicts lists the keys a Guard
// claims but does not own.
//
// Claim order does not start with whichever Guard a new process renders
// first: Reserve claims, before any snapshot, what each Guard applied
// before (its inventory), so that an object stays with the Guard that
// applied it across restarts and changes of leader. A reserved key has an
// owner (Owner) but no desired object (Lookup) until its Guard's first
// snapshot, which keeps the reservations it still declares.
type Store struct {
	mu    sync.RWMutex
	snaps map[string]*Snapshot
	index map[ObjectKey]owned // one entry a key, its claims inside
	// reserved: the keys Reserve claimed for a Guard that has no snapshot
	// yet.
	reserved map[string][]ObjectKey

	// removed: the Guards removed before Reserve reserved (deleted while
	// it read the inventories): not reserved for.
	removed map[string]bool

	reserveMu sync.Mutex // held while Reserve reads what to reserve
	reserveOK bool       // Reserve has reserved (under mu and reserveMu)

	subMu sync.Mutex
	subs  []func()
}

// owned is the Guard that owns a key (claimed it first), its object, and the
// other Guards that claim the key, in claim order: rare, so a key costs one
// map entry.
type owned struct {
	guard  string
	obj    *Object
	others []string
}

// NewStore returns an empty Store.
func NewStore() *Store {
	return &Store{snaps: map[string]*Snapshot{}, index: map[ObjectKey]owned{}, reserved: map[string][]ObjectKey{}}
}

// Holding is what one Guard applied before (its inventory): Reserve
// claims it for the Guard.
type Holding struct {
	Guard string
	Keys  []ObjectKey
}

// Reserve claims, once in the Store's life, the keys of each holding held
// returns for its Guard, in that order (a key two Guards hold goes to the
// first), for Guards with no snapshot yet and not removed meanwhile. Call
// it before the first Set: then a Guard owns after a restart what it owned
// before, and a Guard that declares the same key, rendered first, finds
// it owned. When held fails, nothing is reserved, and the next call tries
// again; calls wait for one another.
func (s *Store) Reserve(held func() ([]Holding, error)) error {
	s.reserveMu.Lock()
	defer s.reserveMu.Unlock()
	if s.reserveOK {
		return nil
	}
	holdings, err := held()
	if err != nil {
		return err
	}
	s.mu.Lock()
	for _, h := range holdings {
		if _, published := s.snaps[h.Guard]; published || s.removed[h.Guard] {
			continue
		}
		for _, k := range h.Keys {
			s.claim(h.Guard, k)
		}
		s.reserved[h.Guard] = append(s.reserved[h.Guard], h.Keys...)
	}
	s.removed = nil
	s.reserveOK = true
	s.mu.Unlock()
	return nil
}

// Guards returns, sorted, the Guards the Store holds a snapshot or a
// reservation of.
func (s *Store) Guards() []string {
	s.mu.RLock()
	defer s.mu.RUnlock()
	out := slices.Collect(maps.Keys(s.snaps))
	for g := range s.reserved {
		if _, ok := s.snaps[g]; !ok {
			out = append(out, g)
		}
	}
	slices.Sort(out)
	return out
}

// Set replaces the snapshot of guard; a nil snapshot removes the guard.
// Subscribers are called after the change.
func (s *Store) Set(guard string, snap *Snapshot) {
	if snap == nil {
		s.Remove(guard)
		return
	}
	// The revision's secret values are scrubbed from everything that
	// leaves the process from now on, and the previous revision's are
	// forgotten. The render refused a revision with more than the
	// registry takes.
	redact.Secrets.Set(guard, snap.SensitiveValues())
	s.mu.Lock()
	old := s.snaps[guard]
	s.snaps[guard] = snap
	// The first snapshot keeps the reservations it declares.
	for _, k := range s.reserved[guard] {
		if _, still := snap.Get(k); !still {
			s.unclaim(guard, k)
		}
	}
	delete(s.reserved, guard)
	for _, o := range keysOf(old) {
		if _, still := snap.Get(o); !still {
			s.unclaim(guard, o)
		}
	}
	for _, o := range snap.Objects {
		if _, had := old.get(o.Key); !had {
			s.claim(guard, o.Key)
		}
		s.reindex(o.Key)
	}
	s.mu.Unlock()
	s.notify()
}

// Remove forgets guard and its claims. Subscribers are called after.
func (s *Store) Remove(guard string) {
	s.mu.Lock()
	old, ok := s.snaps[guard]
	delete(s.snaps, guard)
	for _, k := range keysOf(old) {
		s.unclaim(guard, k)
	}
	reserved := s.reserved[guard]
	for _, k := range reserved {
		s.unclaim(guard, k)
	}
	delete(s.reserved, guard)
	if !s.reserveOK {
		if s.removed == nil {
			s.removed = map[string]bool{}
		}
		s.removed[guard] = true
	}
	s.mu.Unlock()
	if ok || len(reserved) > 0 {
		s.notify()
	}
	redact.Secrets.Forget(guard)
}

// claim adds guard's claim on k, after the claims before it. Callers hold
// mu and reindex k.
func (s *Store) claim(guard string, k ObjectKey) {
	o, ok := s.index[k]
	switch {
	case !ok:
		s.index[k] = owned{guard: guard}
	case o.guard != guard && !slices.Contains(o.others, guard):
		o.others = append(slices.Clone(o.others), guard)
		s.index[k] = o
	}
}

// unclaim drops guard's claim on k and re-indexes k: the next claim in
// order owns k when guard did. Callers hold mu.
func (s *Store) unclaim(guard string, k ObjectKey) {
	o, ok := s.index[k]
	switch {
	case !ok:
		return
	case o.guard != guard:
		o.others = slices.DeleteFunc(slices.Clone(o.others), func(g string) bool { return g == guard })
	case len(o.others) == 0:
		delete(s.index, k)
		return
	default:
		o.guard, o.others = o.others[0], slices.Clone(o.others[1:])
	}
	if len(o.others) == 0 {
		o.others = nil
	}
	s.index[k] = o
	s.reindex(k)
}

// reindex points k at the object of its owner (none while it is only
// reserved). Callers hold mu.
func (s *Store) reindex(k ObjectKey) {
	o, ok := s.index[k]
	if !ok {
		return
	}
	o.obj, _ = s.snaps[o.guard].get(k)
	s.index[k] = o
}

// Lookup returns the guard that owns k and its desired object; not ok
// while k is only reserved.
func (s *Store) Lookup(k ObjectKey) (guard string, obj *Object, ok bool) {
	s.mu.RLock()
	o := s.index[k]
	s.mu.RUnlock()
	if o.obj == nil {
		return "", nil, false
	}
	return o.guard, o.obj, true
}

// Owner returns the guard that owns k, reserved or with its snapshot; ""
// when no Guard claims k.
func (s *Store) Owner(k ObjectKey) string {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.index[k].guard
}

// Snapshot returns the snapshot of guard.
func (s *Store) Snapshot(guard string) (*Snapshot, bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	snap, ok := s.snaps[guard]
	return snap, ok
}

// Kinds returns the distinct GroupVersionKinds of every guard, sorted.
func (s *Store) Kinds() []schema.GroupVersionKind {
	s.mu.RLock()
	seen := map[schema.GroupVersionKind]bool{}
	var out []schema.GroupVersionKind
	for _, snap := range s.snaps {
		for _, gvk := range snap.kinds {
			if !seen[gvk] {
				seen[gvk] = true
				out = append(out, gvk)
			}
		}
	}
	s.mu.RUnlock()
	sortGVKs(out)
	return out
}

// Conflicts returns, sorted, the keys guard claims that another guard owns.
func (s *Store) Conflicts(guard string) []ObjectKey {
	s.mu.RLock()
	defer s.mu.RUnlock()
	var out []ObjectKey
	for _, k := range keysOf(s.snaps[guard]) {
		if o, ok := s.index[k]; ok && o.guard != guard {
			out = append(out, k)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].String() < out[j].String() })
	return out
}

// Subscribe registers fn to be called, synchronously and without the
// Store's lock held, after every Set and Remove.
func (s *Store) Subscribe(fn func()) {
	s.subMu.Lock()
	s.subs = append(s.subs, fn)
	s.subMu.Unlock()
}

func (s *Store) notify() {
	s.subMu.Lock()
	subs := slices.Clone(s.subs)
	s.subMu.Unlock()
	for _, fn := range subs {
		fn()
	}
}

// get is Get that accepts a nil Snapshot.
func (s *Snapshot) get(k ObjectKey) (*Object, bool) {
	if s == nil {
		return nil, false
	}
	return s.Get(k)
}

func keysOf(s *Snapshot) []ObjectKey {
	if s == nil {
		return nil
	}
	keys := make([]ObjectKey, len(s.Objects))
	for i, o := range s.Objects {
		keys[i] = o.Key
	}
	return keys
}

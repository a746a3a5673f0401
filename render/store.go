package render

import (
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
type Store struct {
	mu    sync.RWMutex
	snaps map[string]*Snapshot
	index map[ObjectKey]owned // one entry a key, its claims inside

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
	return &Store{snaps: map[string]*Snapshot{}, index: map[ObjectKey]owned{}}
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
	s.mu.Unlock()
	if ok {
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

// reindex points k at the object of its owner. Callers hold mu.
func (s *Store) reindex(k ObjectKey) {
	o, ok := s.index[k]
	if !ok {
		return
	}
	o.obj, _ = s.snaps[o.guard].Get(k)
	s.index[k] = o
}

// Lookup returns the guard that owns k and its desired object.
func (s *Store) Lookup(k ObjectKey) (guard string, obj *Object, ok bool) {
	s.mu.RLock()
	o, ok := s.index[k]
	s.mu.RUnlock()
	return o.guard, o.obj, ok
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

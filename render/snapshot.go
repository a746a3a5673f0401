package render

import (
	"sync"

	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/driftguard/driftguard/redact"
)

// Source says where in Git an object comes from.
type Source struct {
	URL      string `json:"url"`
	Revision string `json:"revision"`
	Path     string `json:"path"` // file path relative to the repository root, slash-separated
	Line     int    `json:"line"` // 1-based line where the object's document starts
}

// Snapshot is the immutable desired state of one revision. Callers must not
// modify it or the objects it holds.
type Snapshot struct {
	URL, Revision string
	Objects       []*Object // in file order (sorted by path, then document order)

	sensitive []*redact.Sensitive // of the renders of its objects, distinct
	byKey     map[ObjectKey]*Object
	kinds     []schema.GroupVersionKind
	mu        sync.Mutex // held while the objects are finished or copied; see Claim
	claimed   bool
}

// Claim lets the first caller finish the snapshot's objects in place (add a
// Guard's label, default namespaces) instead of copying them; every later
// caller gets first false and must copy. Call release when done reading or
// writing the objects: until then no one else may.
func (s *Snapshot) Claim() (first bool, release func()) {
	s.mu.Lock()
	first = !s.claimed
	s.claimed = true
	return first, s.mu.Unlock
}

// NewSnapshot indexes objs by key. Two objects with the same key are a
// *RenderError at the second one that names both places; several such
// pairs are RenderErrors.
func NewSnapshot(url, revision string, objs []*Object) (*Snapshot, error) {
	s := &Snapshot{URL: url, Revision: revision, Objects: objs, byKey: make(map[ObjectKey]*Object, len(objs))}
	seen := map[schema.GroupVersionKind]bool{}
	var dups RenderErrors
	for i, o := range objs {
		if o == nil || (o.obj == nil && o.raw == nil) {
			return nil, fmt.Errorf("new snapshot: object %d is nil", i)
		}
		if prev, dup := s.byKey[o.Key]; dup {
			dups = append(dups, &RenderError{
				Path: o.Source.Path,
				Line: o.Source.Line,
				Err:  fmt.Errorf("duplicate object %s, first defined at %s:%d", o.Key, prev.Source.Path, prev.Source.Line),
			})
			continue
		}
		s.byKey[o.Key] = o
		if o.sensitive != nil && !slices.Contains(s.sensitive, o.sensitive) {
			s.sensitive = append(s.sensitive, o.sensitive)
		}
		gvk := o.GVK()
		if !seen[gvk] {
			seen[gvk] = true
			s.kinds = append(s.kinds, gvk)
		}
	}
	switch len(dups) {
	case 0:
	case 1:
		return nil, dups[0]
	default:
		return nil, dups
	}
	sortGVKs(s.kinds)
	return s, nil
}

// SensitiveValues are the secret values of the snapshot's objects (see
// Object.Sensitive), which must never leave the process in clear: a Store
// registers them with redact.Secrets for as long as the snapshot is in
// force.
func (s *Snapshot) SensitiveValues() []string {
	if s == nil {
		return nil
	}
	var out []string
	for _, v := range s.sensitive {
		out = append(out, v.List()...)
	}
	return out
}

// Without returns the snapshot less the objects drop says, or s itself
// when it drops none. The objects are shared, finished (Claim): whoever
// claims the result must copy them.
func (s *Snapshot) Without(drop func(*Object) bool) *Snapshot {
	var kept []*Object
	for i, o := range s.Objects {
		if drop(o) {
			if kept == nil {
				kept = append(make([]*Object, 0, len(s.Objects)), s.Objects[:i]...)
			}
			continue
		}
		if kept != nil {
			kept = append(kept, o)
		}
	}
	if kept == nil {
		return s
	}
	out := &Snapshot{URL: s.URL, Revision: s.Revision, Objects: kept, sensitive: s.sensitive, byKey: make(map[ObjectKey]*Object, len(kept)), claimed: true}
	seen := map[schema.GroupVersionKind]bool{}
	for _, o := range kept {
		out.byKey[o.Key] = o
		if gvk := o.GVK(); !seen[gvk] {
			seen[gvk] = true
			out.kinds = append(out.kinds, gvk)
		}
	}
	sortGVKs(out.kinds)
	return out
}

// Freeze keeps every object as compact JSON from now on (see Object). Call
// it once the objects are finished, while holding the snapshot (Claim).
func (s *Snapshot) Freeze() {
	for _, o := range s.Objects {
		o.freeze()
	}
}

// Get returns the object with key k.
func (s *Snapshot) Get(k ObjectKey) (*Object, bool) {
	o, ok := s.byKey[k]
	return o, ok
}

// Kinds returns the distinct GroupVersionKinds of the snapshot, sorted by
// group, version and kind. The slice is a copy.
func (s *Snapshot) Kinds() []schema.GroupVersionKind {
	return slices.Clone(s.kinds)
}

func sortGVKs(gvks []schema.GroupVersionKind) {
	slices.SortFunc(gvks, func(a, b schema.GroupVersionKind) int {
		if c := strings.Compare(a.Group, b.Group); c != 0 {
			return c
		}
		if c := strings.Compare(a.Version, b.Version); c != 0 {
			return c
		}
		return strings.Compare(a.Kind, b.Kind)
	})
}

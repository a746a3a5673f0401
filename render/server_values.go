package render

import (
	"github.com/driftguard/driftguard/drift"
)

// ServerValues returns what the API server makes of this object's fields
// where that differs from Git's text, as learned from the last apply or
// server-side dry run of it at this revision; checked is false until one
// happened. The comparison filters drift through them.
func (o *Object) ServerValues() (sv drift.ServerValues, checked bool) {
	p := o.server.Load()
	if p == nil {
		return nil, false
	}
	return *p, true
}

// SetServerValues records them; safe for concurrent use.
func (o *Object) SetServerValues(sv drift.ServerValues) { o.server.Store(&sv) }

// Drift compares the object with live through drift.Compare and filters the
// result through the server values.
func (o *Object) Drift(live map[string]any, opts drift.Options) []drift.Change {
	changes := drift.Compare(o.Obj().Object, live, opts)
	if len(changes) == 0 {
		return nil
	}
	sv, _ := o.ServerValues()
	return sv.Filter(changes)
}

// InheritServerValues copies the server values (and the in-sync verdict) of
// every object that prev holds unchanged (same key, same content), so a new
// revision does not make objects it did not touch look drifted until they
// are applied again, nor compares them again while their live state stays.
func (s *Snapshot) InheritServerValues(prev *Snapshot) {
	if prev == nil || prev == s {
		return
	}
	for _, o := range s.Objects {
		p, ok := prev.Get(o.Key)
		if !ok {
			continue
		}
		sv, checked := p.ServerValues()
		if !checked || !o.sameContent(p) {
			continue
		}
		o.SetServerValues(sv)
		if v, ok := p.InSync(); ok {
			v.server = o.server.Load()
			o.verdict.Store(&v)
		}
	}
}

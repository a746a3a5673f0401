package drift

import (
	"sort"
	"strconv"

	"github.com/driftguard/driftguard/jsonvalue"
)

// StampAnnotation is the annotation in which the guard's admission webhook
// records who made an admitted change. The webhook writes it itself, so a
// write's own change of it is never an edit (the webhook replaces it). Like
// the other annotations of the guard's own (OwnAnnotationPrefix: a
// break-glass reason, which the policy reads from the incoming object), it
// is never compared.
const StampAnnotation = "driftguard.io/changed-by"

// serverOwnedMetadata are metadata fields only the API server sets. Unlike
// serverSetMetadata they leave out ownerReferences and finalizers: a writer
// sets those, and they decide when the garbage collector deletes an object.
var serverOwnedMetadata = map[string]bool{
	"resourceVersion":            true,
	"uid":                        true,
	"generation":                 true,
	"creationTimestamp":          true,
	"deletionTimestamp":          true,
	"deletionGracePeriodSeconds": true,
	"managedFields":              true,
	"selfLink":                   true,
}

// Edits returns what one write changes in an object: every field whose value
// differs between old, the object before the write, and updated, the object
// the write would store, outside status, server-owned metadata,
// last-applied-configuration, the guard's own annotations (driftguard.io/)
// and the fields opts hides.
// Added fields have Added set and Old nil; removed ones Missing set and Live
// nil. Desired is Git's value at the same path (nil where Git sets none).
// Secret data is redacted. Lists are matched as in Compare, as the API server
// merges them (map lists by key, sets by value; a key repeated on one side
// is matched with the other side's elements of that key in order); atomic
// lists element by element when their lengths agree, else compared whole.
// Ignore rules address list elements by their index in the desired list, as
// in Compare; an element Git lacks is hidden only with its list.
func Edits(old, updated, desired map[string]any, opts Options) []Change {
	e := editor{comparer: comparer{opts: opts, tokens: make([]string, 0, 16), desired: updated}, path: make([]string, 0, 16)}
	if isSecret(updated) || isSecret(old) {
		old, updated = secretWithStringDataMerged(old), secretWithStringDataMerged(updated)
		if desired != nil {
			desired = secretWithStringDataMerged(desired)
		}
		e.secret = true
	}
	if opts.rules != nil {
		e.hide = opts.rules.prepare(desired, e.secret)
	}
	kindOf := desired
	if kindOf == nil {
		kindOf = updated
	}
	e.top(old, updated, desired, schemaFor(kindOf, opts).top())
	sort.Slice(e.changes, func(i, j int) bool { return e.changes[i].Path < e.changes[j].Path })
	return e.changes
}

// editor walks old and updated side by side. comparer.tokens is the path in
// the desired object's index space (what ignore rules address); path is the
// path reported, in the updated object's (the old one's for removed list
// elements).
type editor struct {
	comparer
	path []string
}

func (e *editor) enter(path, desiredToken string) {
	e.path = append(e.path, path)
	e.tokens = append(e.tokens, desiredToken)
}

func (e *editor) leave() {
	e.path = e.path[:len(e.path)-1]
	e.tokens = e.tokens[:len(e.tokens)-1]
}

func (e *editor) top(old, updated, desired map[string]any, t typ) {
	for _, k := range unionKeys(old, updated) {
		switch k {
		case "status", "apiVersion", "kind":
			continue
		case "metadata":
			om, _ := old[k].(map[string]any)
			um, _ := updated[k].(map[string]any)
			dm, _ := desired[k].(map[string]any)
			e.enter(k, k)
			e.metadata(om, um, dm, t.field(k))
			e.leave()
			continue
		}
		e.field(k, old, updated, desired, t.field(k))
	}
}

func (e *editor) metadata(old, updated, desired map[string]any, t typ) {
	for _, k := range unionKeys(old, updated) {
		if serverOwnedMetadata[k] {
			continue
		}
		if k == "annotations" {
			oa, _ := old[k].(map[string]any)
			ua, _ := updated[k].(map[string]any)
			da, _ := desired[k].(map[string]any)
			e.enter(k, k)
			for _, a := range unionKeys(oa, ua) {
				if hasOwnPrefix(a) || ignoredAnnotations[a] {
					continue
				}
				e.field(a, oa, ua, da, nil)
			}
			e.leave()
			continue
		}
		e.field(k, old, updated, desired, t.field(k))
	}
}

func (e *editor) field(k string, old, updated, desired map[string]any, t typ) {
	e.enter(k, k)
	e.value(old[k], updated[k], desired[k], t)
	e.leave()
}

// value compares one field; nil stands for absent (a JSON null is no value).
func (e *editor) value(old, updated, desired any, t typ) {
	if (old == nil && updated == nil) || e.ignored() {
		return
	}
	if (old == nil && e.nullIsEmpty(updated)) || (updated == nil && e.nullIsEmpty(old)) {
		// One value to the API server in a built-in kind (nullIsEmpty).
		return
	}
	// A map one side lacks is reported key by key (a label removed with
	// the last one is that label, not the labels).
	om, oldMap := old.(map[string]any)
	um, updMap := updated.(map[string]any)
	if (oldMap && updated == nil && len(om) > 0) || (updMap && old == nil && len(um) > 0) {
		d, _ := desired.(map[string]any)
		for _, k := range unionKeys(om, um) {
			e.field(k, om, um, d, t.field(k))
		}
		return
	}
	if old != nil && updated != nil {
		switch o := old.(type) {
		case map[string]any:
			if u, ok := updated.(map[string]any); ok {
				d, _ := desired.(map[string]any)
				for _, k := range unionKeys(o, u) {
					e.field(k, o, u, d, t.field(k))
				}
				return
			}
		case []any:
			if u, ok := updated.([]any); ok {
				d, _ := desired.([]any)
				e.list(o, u, d, t)
				return
			}
		}
		if jsonvalue.Equal(old, updated) {
			return
		}
	}
	e.record(old, updated, desired)
}

func (e *editor) list(old, updated, desired []any, t typ) {
	kind, keys := t.list()
	et := t.elem()
	if kind == listSet {
		keys = nil
	}
	if kind != listAtomic {
		o, ook := indexKeys(old, keys, et)
		u, uok := indexKeys(updated, keys, et)
		// Without a schema, names match elements only where they are
		// distinct on both sides.
		if ook && uok && (kind != listNames || (o.distinct() && u.distinct())) {
			d, dok := indexKeys(desired, keys, et)
			if !dok {
				d = keyed{keys: keys, et: et} // matches nothing
			}
			e.keyedList(old, updated, desired, o, u, d, et)
			return
		}
	}
	if len(old) != len(updated) {
		e.record(old, updated, desired)
		return
	}
	for i := range old {
		var d any
		if len(desired) == len(old) {
			d = desired[i]
		}
		e.enter(strconv.Itoa(i), strconv.Itoa(i))
		e.value(old[i], updated[i], d, et)
		e.leave()
	}
}

// keyedList pairs the n-th element of each key in updated with the n-th of
// that key in old (and in desired, for the ignore rules' index and Git's
// value); an updated element without a partner was added, an old one
// without a partner removed.
func (e *editor) keyedList(old, updated, desired []any, o, u, d keyed, et typ) {
	var ubuf, obuf, dbuf [4]int
	nth := func(idx []int, n int) int {
		if n < len(idx) {
			return idx[n]
		}
		return -1
	}
	for i, uv := range updated {
		uIdx := u.same(uv, ubuf[:0])
		n := position(uIdx, i)
		var ov any
		if j := nth(o.same(uv, obuf[:0]), n); j >= 0 {
			ov = old[j]
		}
		e.element(strconv.Itoa(i), ov, uv, desired, nth(d.same(uv, dbuf[:0]), n), et)
	}
	for j, ov := range old {
		oIdx := o.same(ov, obuf[:0])
		n := position(oIdx, j)
		if n >= len(u.same(ov, ubuf[:0])) {
			e.element(strconv.Itoa(j), ov, nil, desired, nth(d.same(ov, dbuf[:0]), n), et)
		}
	}
}

// element compares one list element. Its desired token is its index in the
// desired list (at, -1 when Git does not have it: "-", which no rule
// addresses).
func (e *editor) element(path string, old, updated any, desired []any, at int, et typ) {
	token, dv := "-", any(nil)
	if at >= 0 {
		token, dv = strconv.Itoa(at), desired[at]
	}
	e.enter(path, token)
	if (old == nil) != (updated == nil) {
		if !e.ignored() {
			e.record(old, updated, dv) // an element added or removed whole
		}
	} else {
		e.value(old, updated, dv, et)
	}
	e.leave()
}

func (e *editor) record(old, updated, desired any) {
	if e.secret && len(e.path) >= 1 && (e.path[0] == "data" || e.path[0] == "stringData") {
		redact := redactPresent
		if len(e.path) == 1 {
			redact = RedactMap
		}
		old, updated, desired = redact(old), redact(updated), redact(desired)
	}
	e.changes = append(e.changes, Change{Path: pointer(e.path), Old: old, Live: updated, Desired: desired,
		Added: old == nil, Missing: updated == nil})
}

// unionKeys returns the keys of a and b, sorted.
func unionKeys(a, b map[string]any) []string {
	keys := make([]string, 0, len(a)+len(b))
	for k := range a {
		keys = append(keys, k)
	}
	for k := range b {
		if _, ok := a[k]; !ok {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	return keys
}

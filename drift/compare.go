package drift

import (
	"encoding/base64"
	"maps"
	"sort"
	"strconv"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/driftguard/driftguard/jsonvalue"
)

// Options tune a comparison.
type Options struct {
	// Ignore, when set, is asked for each desired field path (reference tokens);
	// a true answer skips the field and everything below it.
	Ignore func(tokens []string) bool

	// Schema is the kind's structure as the API server knows it (its
	// OpenAPI; drift/schemas caches it per kind): it decides how each list
	// is matched. Nil takes the schema client-go compiles in for a built-in
	// kind; for other kinds without one, lists of objects with distinct
	// names are matched by name and any other list is atomic.
	Schema *Schema

	// Borrowed, when set, is the field manager a verified writer who is
	// neither the guard nor the control plane named for the object's
	// newest write, and BorrowedSince when it was made: an entry of that
	// name written then or later is that writer's, the guard's or a
	// control-plane component's name or not (a field manager is the
	// writer's word), and what it owns Git does not set is an addition.
	Borrowed      string
	BorrowedSince time.Time

	// rules are the ignore rules For selected for one object; nil when none
	// match, so the zero Options costs nothing.
	rules *objectRules
}

// serverSetMetadata are metadata fields whose Git value, if any, is never
// compared: those only the API server sets, and the owner references and
// finalizers controllers set (what a writer adds to them is an addition).
var serverSetMetadata = func() map[string]bool {
	m := maps.Clone(serverOwnedMetadata)
	m["ownerReferences"], m["finalizers"] = true, true
	return m
}()

// ignoredAnnotations are annotations that carry bookkeeping, not intent.
var ignoredAnnotations = map[string]bool{
	"kubectl.kubernetes.io/last-applied-configuration": true,
}

// OwnAnnotationPrefix marks annotations the guard itself writes (for example the
// changed-by stamp); they are never drift.
const OwnAnnotationPrefix = "driftguard.io/"

// Compare returns the fields Git sets whose live value differs. An empty
// result means in sync. Secret values are redacted in the result.
func Compare(desired, live map[string]any, opts Options) []Change {
	c := comparer{opts: opts, tokens: make([]string, 0, 16), desired: desired}
	if isSecret(desired) {
		desired = secretWithStringDataMerged(desired)
		live = secretWithStringDataMerged(live)
		c.secret = true
	}
	if opts.rules != nil {
		c.hide = opts.rules.prepare(desired, c.secret)
	}
	c.object(desired, live, schemaFor(desired, opts).top())
	if len(c.changes) > 1 {
		// Map order is random; a stable order keeps messages and records diffable.
		sort.Slice(c.changes, func(i, j int) bool { return c.changes[i].Path < c.changes[j].Path })
	}
	return c.changes
}

// InSync reports whether Compare finds no change.
func InSync(desired, live map[string]any, opts Options) bool {
	return len(Compare(desired, live, opts)) == 0
}

type comparer struct {
	opts    Options
	tokens  []string
	changes []Change
	secret  bool
	// hide holds the fields ignore rules hide from this comparison; its
	// zero value hides nothing.
	hide hider
	// desired is the object Git declares; builtin caches whether its kind
	// is built in (0 not yet known, 1 yes, -1 no), asked only at a null.
	desired map[string]any
	builtin int8
}

// nullIsEmpty reports whether a live null equals Git's value v (see
// nullIsEmpty): only in a built-in kind.
func (c *comparer) nullIsEmpty(v any) bool {
	if !nullIsEmpty(v) {
		return false
	}
	if c.builtin == 0 {
		c.builtin = -1
		if isBuiltin(c.desired) {
			c.builtin = 1
		}
	}
	return c.builtin == 1
}

// ignored reports whether the field at c.tokens, and everything below it, is
// left out of the comparison.
func (c *comparer) ignored() bool {
	if c.opts.Ignore != nil && c.opts.Ignore(c.tokens) {
		return true
	}
	return c.hide.active && c.hide.hidden(c.tokens)
}

func (c *comparer) object(desired, live map[string]any, t typ) {
	for k, dv := range desired {
		switch k {
		case "status", "apiVersion", "kind":
			// status is the server's; apiVersion may differ by conversion;
			// kind is part of the identity already.
			continue
		case "metadata":
			dm, _ := dv.(map[string]any)
			lm, _ := live["metadata"].(map[string]any)
			c.metadata(dm, lm, t.field(k))
			continue
		}
		c.push(k)
		lv, ok := live[k]
		c.value(dv, lv, ok, t.child(k, dv))
		c.pop()
	}
}

func (c *comparer) metadata(desired, live map[string]any, t typ) {
	c.push("metadata")
	defer c.pop()
	if c.ignored() {
		return
	}
	for k, dv := range desired {
		if serverSetMetadata[k] || k == "namespace" {
			// The namespace is identity: the live object was found by it,
			// and the API server drops a cluster-scoped object's.
			continue
		}
		lv, ok := live[k]
		if k == "annotations" {
			c.push(k)
			if !c.ignored() {
				c.annotations(dv, lv)
			}
			c.pop()
			continue
		}
		c.push(k)
		c.value(dv, lv, ok, t.child(k, dv))
		c.pop()
	}
}

func (c *comparer) annotations(desired, live any) {
	dm, _ := desired.(map[string]any)
	lm, _ := live.(map[string]any)
	for k, dv := range dm {
		if ignoredAnnotations[k] || hasOwnPrefix(k) {
			continue
		}
		lv, ok := lm[k]
		c.push(k)
		c.value(dv, lv, ok, nil)
		c.pop()
	}
}

func hasOwnPrefix(k string) bool {
	return len(k) >= len(OwnAnnotationPrefix) && k[:len(OwnAnnotationPrefix)] == OwnAnnotationPrefix
}

func (c *comparer) push(t string) { c.tokens = append(c.tokens, t) }
func (c *comparer) pop()          { c.tokens = c.tokens[:len(c.tokens)-1] }

func (c *comparer) value(desired, live any, present bool, t typ) {
	if desired == nil {
		// An explicit null in Git expresses no opinion about the field.
		return
	}
	if c.ignored() {
		return
	}
	if !present || live == nil {
		if present && c.nullIsEmpty(desired) {
			// The API server stores Git's empty value as this null.
			return
		}
		// Git sets the field and the cluster lacks it. Where the API server
		// itself drops Git's value (the empty values of omitempty fields:
		// "hostNetwork: false", "annotations: {}"), the server values of
		// the object's last apply or dry run say so and filter it out; a
		// writer who removed "allowPrivilegeEscalation: false" is drift.
		c.record(desired, nil, true)
		return
	}
	switch d := desired.(type) {
	case map[string]any:
		l, ok := live.(map[string]any)
		if !ok {
			c.record(desired, live, false)
			return
		}
		for k, dv := range d {
			lv, ok := l[k]
			c.push(k)
			c.value(dv, lv, ok, t.child(k, dv))
			c.pop()
		}
	case []any:
		l, ok := live.([]any)
		if !ok {
			c.record(desired, live, false)
			return
		}
		c.list(d, l, t)
	default:
		if !scalarEqual(desired, live) {
			c.record(desired, live, false)
		}
	}
}

// list compares a list Git sets, matching elements as the API server merges
// the list (its schema: Schema): a map list by its key fields, a set by
// value, in any order, elements others added not being drift; an atomic
// list whole, element by element in place (fields Git does not set in an
// element, such as defaults, are not compared). Without a schema a list of
// objects with distinct names is matched by name, any other is atomic.
func (c *comparer) list(desired, live []any, t typ) {
	kind, keys := t.list()
	et := t.elem()
	switch kind {
	case listSet:
		keys = nil
		fallthrough
	case listMap:
		if d, ok := indexKeys(desired, keys, et); ok {
			if l, ok := indexKeys(live, keys, et); ok {
				c.keyedList(desired, live, d, l, et, false)
				return
			}
		}
	case listNames:
		if d, ok := indexKeys(desired, keys, et); ok && d.distinct() {
			if l, ok := indexKeys(live, keys, et); ok {
				c.keyedList(desired, live, d, l, et, true)
				return
			}
		}
	}
	if len(desired) != len(live) {
		c.record(desired, live, false)
		return
	}
	for i := range desired {
		c.push(strconv.Itoa(i))
		c.value(desired[i], live[i], true, et)
		c.pop()
	}
}

// keyedList compares the elements of a keyed list by key. A key Git holds
// once and the cluster several times is drift: applying Git's element
// replaces them all with it, as server-side apply does. Where Git repeats a
// key (which an apply refuses), its n-th element is compared with the
// cluster's n-th of that key. lenient (no schema: matched by name only by
// guess) takes a live element with a repeated name that matches, rather
// than report drift the API server may not see.
func (c *comparer) keyedList(desired, live []any, d, l keyed, et typ, lenient bool) {
	var dbuf, lbuf [4]int
	for i, dv := range desired {
		c.push(strconv.Itoa(i))
		dIdx := d.same(dv, dbuf[:0])
		lIdx := l.same(dv, lbuf[:0])
		switch {
		case len(lIdx) == 0:
			// A missing element goes through value too, so ignore rules
			// can hide it.
			c.value(dv, nil, false, et)
		case len(lIdx) == 1 && len(dIdx) == 1:
			c.value(dv, live[lIdx[0]], true, et)
		default:
			c.repeated(dv, live, lIdx, position(dIdx, i), len(dIdx), et, lenient)
		}
		c.pop()
	}
}

// repeated compares the occ-th of n desired elements of one key with the
// live elements at idx that share it.
func (c *comparer) repeated(dv any, live []any, idx []int, occ, n int, et typ, lenient bool) {
	if lenient && n == 1 {
		for _, j := range idx {
			before := len(c.changes)
			c.value(dv, live[j], true, et)
			if len(c.changes) == before {
				return
			}
			c.changes = c.changes[:before]
		}
	}
	if n == len(idx) || (lenient && n == 1) {
		if occ < len(idx) {
			c.value(dv, live[idx[occ]], true, et)
		} else {
			c.value(dv, nil, false, et)
		}
		return
	}
	if occ > 0 || c.ignored() {
		return
	}
	// The cluster holds the key another number of times than Git: one
	// change for the key, with the cluster's elements of it.
	group := make([]any, len(idx))
	for i, j := range idx {
		group[i] = live[j]
	}
	c.record(dv, group, false)
}

func (c *comparer) record(desired, live any, missing bool) {
	if c.secret && len(c.tokens) >= 2 && (c.tokens[0] == "data" || c.tokens[0] == "stringData") {
		desired, live = RedactValue(desired), redactPresent(live)
	} else if c.secret && len(c.tokens) == 1 && (c.tokens[0] == "data" || c.tokens[0] == "stringData") {
		desired, live = RedactMap(desired), RedactMap(live)
	}
	c.changes = append(c.changes, Change{Path: pointer(c.tokens), Desired: desired, Live: live, Missing: missing})
}

func redactPresent(v any) any {
	if v == nil {
		return nil
	}
	return RedactValue(v)
}

// scalarEqual compares two scalars as the API server would store them: numbers
// by value whatever their Go type, and resource quantities by amount
// ("1000m" equals "1", 1 equals "1").
func scalarEqual(desired, live any) bool {
	if desired == live {
		return true
	}
	df, dnum := jsonvalue.Number(desired)
	lf, lnum := jsonvalue.Number(live)
	if dnum && lnum {
		return df == lf
	}
	ds, dstr := desired.(string)
	ls, lstr := live.(string)
	switch {
	case dstr && lstr:
		return quantityEqual(ds, ls)
	case dnum && lstr:
		return quantityEqual(strconv.FormatFloat(df, 'f', -1, 64), ls)
	case dstr && lnum:
		return quantityEqual(ds, strconv.FormatFloat(lf, 'f', -1, 64))
	}
	return false
}

func quantityEqual(a, b string) bool {
	if a == "" || b == "" || !startsLikeNumber(a) || !startsLikeNumber(b) {
		return false
	}
	qa, err := resource.ParseQuantity(a)
	if err != nil {
		return false
	}
	qb, err := resource.ParseQuantity(b)
	if err != nil {
		return false
	}
	return qa.Cmp(qb) == 0
}

func startsLikeNumber(s string) bool {
	ch := s[0]
	return (ch >= '0' && ch <= '9') || ch == '.' || ch == '+' || ch == '-'
}

func isSecret(obj map[string]any) bool {
	k, _ := obj["kind"].(string)
	v, _ := obj["apiVersion"].(string)
	return k == "Secret" && v == "v1"
}

// secretWithStringDataMerged folds stringData into data the way the API
// server does, so Git's stringData compares with the stored data.
func secretWithStringDataMerged(obj map[string]any) map[string]any {
	sd, ok := obj["stringData"].(map[string]any)
	if !ok || len(sd) == 0 {
		return obj
	}
	out := make(map[string]any, len(obj))
	for k, v := range obj {
		out[k] = v
	}
	delete(out, "stringData")
	data := map[string]any{}
	if d, ok := obj["data"].(map[string]any); ok {
		for k, v := range d {
			data[k] = v
		}
	}
	for k, v := range sd {
		if s, ok := v.(string); ok {
			data[k] = base64.StdEncoding.EncodeToString([]byte(s))
		}
	}
	out["data"] = data
	return out
}

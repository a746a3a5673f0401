package drift

import (
	"encoding/json"
	"math"
	"strconv"
	"strings"
	"sync"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/managedfields"
	"k8s.io/client-go/applyconfigurations"
	"k8s.io/client-go/kubernetes/scheme"
	smd "sigs.k8s.io/structured-merge-diff/v6/schema"
	"sigs.k8s.io/structured-merge-diff/v6/typed"

	"github.com/driftguard/driftguard/jsonvalue"
)

// Schema is the structure of one kind as the API server merges it: for every
// list, whether it is atomic, a set or a map keyed by which fields (its
// x-kubernetes-list-type and x-kubernetes-list-map-keys, or for older
// built-in fields its patch merge key), and the defaults of key fields. The
// comparison matches list elements exactly as server-side apply does. A nil
// Schema means none is known for the kind (see Options.Schema).
type Schema struct {
	s    *smd.Schema
	root smd.TypeRef

	once     sync.Once
	rootNode *node
	untyped  *node
	mu       sync.Mutex
	named    map[string]*node
}

// SchemaOf returns the Schema of a typed value, as a managedfields
// TypeConverter built from the API server's OpenAPI returns it.
func SchemaOf(tv *typed.TypedValue) *Schema {
	if tv == nil {
		return nil
	}
	return &Schema{s: tv.Schema(), root: tv.TypeRef()}
}

// SchemaFrom returns the Schema of kind gvk from a TypeConverter, nil when
// the converter does not know the kind.
func SchemaFrom(tc managedfields.TypeConverter, gvk schema.GroupVersionKind) *Schema {
	u := &unstructured.Unstructured{Object: map[string]any{}}
	u.SetGroupVersionKind(gvk)
	tv, err := tc.ObjectToTyped(u)
	if err != nil {
		return nil
	}
	return SchemaOf(tv)
}

var builtin struct {
	once sync.Once
	tc   managedfields.TypeConverter
	mu   sync.RWMutex
	m    map[schema.GroupVersionKind]*Schema
}

// BuiltinSchema returns the schema client-go compiles in for a built-in kind
// (the same the API server of its version publishes), nil for any other
// kind. Compare uses it when Options.Schema is nil.
func BuiltinSchema(gvk schema.GroupVersionKind) *Schema {
	if !scheme.Scheme.Recognizes(gvk) {
		return nil // without reading client-go's schemas (tens of MB)
	}
	builtin.once.Do(func() {
		builtin.tc = applyconfigurations.NewTypeConverter(scheme.Scheme)
		builtin.m = map[schema.GroupVersionKind]*Schema{}
	})
	builtin.mu.RLock()
	s, ok := builtin.m[gvk]
	builtin.mu.RUnlock()
	if ok {
		return s
	}
	s = SchemaFrom(builtin.tc, gvk)
	builtin.mu.Lock()
	builtin.m[gvk] = s
	builtin.mu.Unlock()
	return s
}

// isBuiltin reports whether apiVersion and kind name a built-in kind, which
// the API server stores as protobuf: there an empty list or map and null are
// one value (Role rules: [] reads back as null) and a null string in a map
// (a Secret's or ConfigMap's data) reads back as "".
func isBuiltin(obj map[string]any) bool {
	v, _ := obj["apiVersion"].(string)
	k, _ := obj["kind"].(string)
	return k != "" && scheme.Scheme.Recognizes(schema.FromAPIVersionAndKind(v, k))
}

// schemaFor returns opts.Schema, else the built-in schema of desired's kind.
func schemaFor(desired map[string]any, opts Options) *Schema {
	if opts.Schema != nil {
		return opts.Schema
	}
	v, _ := desired["apiVersion"].(string)
	k, _ := desired["kind"].(string)
	if k == "" {
		return nil
	}
	return BuiltinSchema(schema.FromAPIVersionAndKind(v, k))
}

// typ is a node of a Schema, nil when no schema is known for the kind. A
// node with a zero atom is one the schema says nothing about (a field it
// does not declare, x-kubernetes-preserve-unknown-fields): its lists are
// atomic, as the API server treats them.
type typ = *node

// node is one type of a Schema, with what the comparison asks of it worked
// out once (the schema's lookups cost map accesses and, for types with an
// element relationship override, an allocation): the comparison runs on
// every informer event.
type node struct {
	schema *Schema
	atom   smd.Atom
	once   sync.Once
	// Built by once.
	fields   map[string]*node // a struct's fields
	values   *node            // a map's values (nil: untyped)
	items    *node            // a list's elements
	kind     listKind
	keys     []string
	defaults map[string]any // defaults of fields, for list keys
}

// top is the node of the kind itself, nil without a schema.
func (s *Schema) top() typ {
	if s == nil {
		return nil
	}
	s.once.Do(func() {
		s.named = map[string]*node{}
		s.untyped = &node{schema: s}
		s.rootNode = s.node(s.root)
	})
	return s.rootNode
}

// node returns the node of a type reference: one per named type (and
// override), so recursive types end.
func (s *Schema) node(tr smd.TypeRef) *node {
	if tr.NamedType == nil {
		if tr.Inlined == (smd.Atom{}) {
			return s.untyped
		}
		return &node{schema: s, atom: tr.Inlined}
	}
	key := *tr.NamedType
	if tr.ElementRelationship != nil {
		key += "\x00" + string(*tr.ElementRelationship)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if n, ok := s.named[key]; ok {
		return n
	}
	a, ok := s.s.Resolve(tr)
	n := s.untyped
	if ok {
		n = &node{schema: s, atom: a}
	}
	s.named[key] = n
	return n
}

func (n *node) build() {
	n.once.Do(func() {
		s := n.schema
		n.kind = listAtomic
		if m := n.atom.Map; m != nil {
			n.fields = make(map[string]*node, len(m.Fields))
			for _, f := range m.Fields {
				n.fields[f.Name] = s.node(f.Type)
				if f.Default != nil {
					if n.defaults == nil {
						n.defaults = map[string]any{}
					}
					n.defaults[f.Name] = f.Default
				}
			}
			if m.ElementType != (smd.TypeRef{}) {
				n.values = s.node(m.ElementType)
			}
		}
		if l := n.atom.List; l != nil {
			n.items = s.node(l.ElementType)
			if l.ElementRelationship == smd.Associative {
				n.kind, n.keys = listMap, l.Keys
				if len(l.Keys) == 0 {
					n.kind, n.keys = listSet, nil
				}
			}
		}
	})
}

// field is the type of a map's field (or of a map's values).
func (n *node) field(name string) typ {
	if n == nil {
		return nil
	}
	n.build()
	if f, ok := n.fields[name]; ok {
		return f
	}
	if n.values != nil {
		return n.values
	}
	return n.schema.untyped
}

// elem is the type of a list's elements.
func (n *node) elem() typ {
	if n == nil {
		return nil
	}
	n.build()
	if n.items != nil {
		return n.items
	}
	return n.schema.untyped
}

// listKind is how a list's elements are matched.
type listKind int

const (
	listAtomic listKind = iota // compared whole, element by element in place
	listSet                    // scalar elements, matched by value
	listMap                    // object elements, matched by their key fields
	listNames                  // no schema: by name when names are distinct, else atomic
)

// list returns how a list of this type is matched, and its key fields.
func (n *node) list() (listKind, []string) {
	if n == nil {
		return listNames, nameKey
	}
	n.build()
	return n.kind, n.keys
}

var nameKey = []string{"name"}

// keyOf returns the key of a list element as the API server derives it: the
// values of the key fields it has, a missing key field taking its schema
// default, and one without a default left out (so {host: a} and {host: a,
// port: 80} are different elements). ok is false for an element with no key
// field at all, which the API server refuses in an apply. For a set (keys
// nil) the element itself is the key. Only long lists are indexed by it;
// short ones are matched by sameKey, which allocates nothing.
func keyOf(el any, keys []string, et typ) (string, bool) {
	if keys == nil {
		switch el.(type) {
		case map[string]any, []any:
			return "", false
		}
		return scalarKey(el), true
	}
	m, ok := el.(map[string]any)
	if !ok {
		return "", false
	}
	var b strings.Builder
	n := 0
	for _, k := range keys {
		v, ok := keyField(m, k, et)
		if !ok {
			continue
		}
		b.WriteString(k)
		b.WriteByte('=')
		b.WriteString(scalarKey(v))
		b.WriteByte(0)
		n++
	}
	return b.String(), n > 0
}

// keyField returns key field k of an element, or its schema default.
func keyField(m map[string]any, k string, et typ) (any, bool) {
	if v, ok := m[k]; ok {
		return v, true
	}
	v := et.keyDefault(k)
	return v, v != nil
}

// keyable reports whether an element has a key (keyOf's ok).
func keyable(el any, keys []string, et typ) bool {
	if keys == nil {
		switch el.(type) {
		case map[string]any, []any:
			return false
		}
		return true
	}
	m, ok := el.(map[string]any)
	if !ok {
		return false
	}
	for _, k := range keys {
		if _, ok := keyField(m, k, et); ok {
			return true
		}
	}
	return false
}

// sameKey reports whether two keyable elements have one key.
func sameKey(a, b any, keys []string, et typ) bool {
	if keys == nil {
		return keyValueEqual(a, b)
	}
	am, bm := a.(map[string]any), b.(map[string]any)
	for _, k := range keys {
		av, aok := keyField(am, k, et)
		bv, bok := keyField(bm, k, et)
		if aok != bok || (aok && !keyValueEqual(av, bv)) {
			return false
		}
	}
	return true
}

// keyValueEqual compares key values as scalarKey encodes them: numbers by
// value, other types never equal to each other.
func keyValueEqual(a, b any) bool {
	switch x := a.(type) {
	case string:
		y, ok := b.(string)
		return ok && x == y
	case bool:
		y, ok := b.(bool)
		return ok && x == y
	case nil:
		return b == nil
	}
	if af, ok := jsonvalue.Number(a); ok {
		bf, ok := jsonvalue.Number(b)
		return ok && af == bf
	}
	return scalarKey(a) == scalarKey(b)
}

// keyDefault is the schema default of field k of an element type, nil when
// it has none.
func (n *node) keyDefault(k string) any {
	if n == nil {
		return nil
	}
	n.build()
	return n.defaults[k]
}

// scalarKey encodes a key value so that equal values (numbers whatever their
// Go type) encode alike and values of different types differently.
func scalarKey(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case bool:
		if x {
			return "\x00true"
		}
		return "\x00false"
	case nil:
		return "\x00null"
	case int64:
		return "\x00" + strconv.FormatInt(x, 10)
	}
	if f, ok := jsonvalue.Number(v); ok {
		if f == math.Trunc(f) && math.Abs(f) < 1<<53 {
			return "\x00" + strconv.FormatInt(int64(f), 10)
		}
		return "\x00" + strconv.FormatFloat(f, 'g', -1, 64)
	}
	b, _ := json.Marshal(v)
	return "\x00" + string(b)
}

// smallList is the longest list matched by scanning: keys compared in place
// cost less than a map of encoded keys up to about this length.
const smallList = 16

// keyed is a list whose elements all have a key, for finding those of a key.
type keyed struct {
	list []any
	keys []string // the key fields; nil for a set
	et   typ
	at   map[string][]int // long lists: indices by encoded key
}

// indexKeys returns list as keyed; false when an element has no key (the
// list is then compared atomically).
func indexKeys(list []any, keys []string, et typ) (keyed, bool) {
	k := keyed{list: list, keys: keys, et: et}
	if len(list) <= smallList {
		for _, el := range list {
			if !keyable(el, keys, et) {
				return keyed{}, false
			}
		}
		return k, true
	}
	k.at = make(map[string][]int, len(list))
	for i, el := range list {
		key, ok := keyOf(el, keys, et)
		if !ok {
			return keyed{}, false
		}
		k.at[key] = append(k.at[key], i)
	}
	return k, true
}

// same appends to dst the indices of the elements whose key is el's (el
// keyable, from a list of the same type) and returns it.
func (k *keyed) same(el any, dst []int) []int {
	if k.at != nil {
		key, _ := keyOf(el, k.keys, k.et)
		return append(dst, k.at[key]...)
	}
	for i, e := range k.list {
		if sameKey(el, e, k.keys, k.et) {
			dst = append(dst, i)
		}
	}
	return dst
}

// distinct reports whether no key repeats.
func (k *keyed) distinct() bool {
	if k.at != nil {
		return len(k.at) == len(k.list)
	}
	for i := range k.list {
		for j := i + 1; j < len(k.list); j++ {
			if sameKey(k.list[i], k.list[j], k.keys, k.et) {
				return false
			}
		}
	}
	return true
}

// position returns the index of i in idx, -1 when absent.
func position(idx []int, i int) int {
	for n, j := range idx {
		if j == i {
			return n
		}
	}
	return -1
}

// nullIsEmpty reports whether a live null stands for Git's value v: in a
// built-in kind the API server stores an empty list or map and null alike,
// and a null string of a map as "" (a Secret's data, a ConfigMap's). In a
// custom resource a null survives only in a field its schema makes
// nullable, where null is a value of its own: applying Git's [] over it
// stores [].
func nullIsEmpty(v any) bool {
	switch x := v.(type) {
	case []any:
		return len(x) == 0
	case map[string]any:
		return len(x) == 0
	case string:
		return x == ""
	}
	return false
}

// child is field for a value with lists in it (a map or a list), else nil:
// a scalar needs no type, and most fields are scalars.
func (n *node) child(name string, v any) typ {
	switch v.(type) {
	case map[string]any, []any:
		return n.field(name)
	}
	return nil
}

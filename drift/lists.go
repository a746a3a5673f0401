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
	if scheme.Scheme.Recognizes(gvk) {
		s = SchemaFrom(builtin.tc, gvk)
	}
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

// typ is a node of a Schema. With s nil no schema is known for the kind; with
// s set and a zero atom the schema says nothing about the node (a field it
// does not declare, x-kubernetes-preserve-unknown-fields), and its lists are
// atomic, as the API server treats them.
type typ struct {
	s    *smd.Schema
	atom smd.Atom
}

func (s *Schema) top() typ {
	if s == nil {
		return typ{}
	}
	return typ{s: s.s}.resolve(s.root)
}

func (t typ) resolve(tr smd.TypeRef) typ {
	if t.s == nil {
		return t
	}
	a, ok := t.s.Resolve(tr)
	if !ok {
		return typ{s: t.s}
	}
	return typ{s: t.s, atom: a}
}

// field is the type of a map's field (or of a map's values).
func (t typ) field(name string) typ {
	if t.s == nil || t.atom.Map == nil {
		return typ{s: t.s}
	}
	if sf, ok := t.atom.Map.FindField(name); ok {
		return t.resolve(sf.Type)
	}
	return t.resolve(t.atom.Map.ElementType)
}

// elem is the type of a list's elements.
func (t typ) elem() typ {
	if t.s == nil || t.atom.List == nil {
		return typ{s: t.s}
	}
	return t.resolve(t.atom.List.ElementType)
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
func (t typ) list() (listKind, []string) {
	switch {
	case t.s == nil:
		return listNames, nameKey
	case t.atom.List == nil || t.atom.List.ElementRelationship != smd.Associative:
		return listAtomic, nil
	case len(t.atom.List.Keys) == 0:
		return listSet, nil
	}
	return listMap, t.atom.List.Keys
}

var nameKey = []string{"name"}

// keyOf returns the key of a list element as the API server derives it: the
// values of the key fields it has, a missing key field taking its schema
// default, and one without a default left out (so {host: a} and {host: a,
// port: 80} are different elements). ok is false for an element with no key
// field at all, which the API server refuses in an apply. For a set the
// element itself is the key (et is then unused and keys nil).
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
	if len(keys) == 1 {
		// The common case (name, mountPath) without allocating.
		v, ok := m[keys[0]]
		if !ok {
			if v = et.keyDefault(keys[0]); v == nil {
				return "", false
			}
		}
		return scalarKey(v), true
	}
	var b strings.Builder
	n := 0
	for _, k := range keys {
		v, ok := m[k]
		if !ok {
			if v = et.keyDefault(k); v == nil {
				continue
			}
		}
		b.WriteString(k)
		b.WriteByte('=')
		b.WriteString(scalarKey(v))
		b.WriteByte(0)
		n++
	}
	return b.String(), n > 0
}

// keyDefault is the schema default of field k of an element type, nil when
// it has none.
func (t typ) keyDefault(k string) any {
	if t.s == nil || t.atom.Map == nil {
		return nil
	}
	if sf, ok := t.atom.Map.FindField(k); ok {
		return sf.Default
	}
	return nil
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
	}
	if f, ok := number(v); ok {
		if f == math.Trunc(f) && math.Abs(f) < 1<<53 {
			return "\x00" + strconv.FormatInt(int64(f), 10)
		}
		if i, ok := v.(int64); ok {
			return "\x00" + strconv.FormatInt(i, 10)
		}
		return "\x00" + strconv.FormatFloat(f, 'g', -1, 64)
	}
	b, _ := json.Marshal(v)
	return "\x00" + string(b)
}

// keyed indexes a list by element key. at holds, for each key, the index of
// its only element, or -1 when it repeats (then dups holds its indices in
// order). ok is false when an element has no key: the list is then
// compared atomically.
type keyed struct {
	at   map[string]int
	dups map[string][]int
	keys []string // the key of each element, in order
}

func indexKeys(list []any, keys []string, et typ) (keyed, bool) {
	k := keyed{at: make(map[string]int, len(list)), keys: make([]string, len(list))}
	for i, el := range list {
		key, ok := keyOf(el, keys, et)
		if !ok {
			return keyed{}, false
		}
		k.keys[i] = key
		j, seen := k.at[key]
		switch {
		case !seen:
			k.at[key] = i
		case j >= 0:
			if k.dups == nil {
				k.dups = map[string][]int{}
			}
			k.dups[key] = []int{j, i}
			k.at[key] = -1
		default:
			k.dups[key] = append(k.dups[key], i)
		}
	}
	return k, true
}

// occurrences returns the indices of the elements with key, in order.
func (k keyed) occurrences(key string) []int {
	switch j, ok := k.at[key]; {
	case !ok:
		return nil
	case j >= 0:
		return []int{j}
	}
	return k.dups[key]
}

// distinct reports whether no key repeats.
func (k keyed) distinct() bool { return len(k.dups) == 0 }

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

package drift

import (
	"bytes"
	"encoding/json"
	"slices"
	"strconv"
	"strings"
)

// fieldsNode is a set of fields read from managedFields (FieldsV1): at each
// level, map fields ("f:name"), list elements by key ("k:{...}"), by value
// ("v:...") or by index ("i:N"). A node that is owned with everything below
// it (FieldsV1 "{}") is whole.
type fieldsNode struct {
	whole   bool
	fields  map[string]*fieldsNode
	keys    []keyedNode
	values  []valuedNode
	indexes map[int]*fieldsNode
}

type keyedNode struct {
	key  map[string]any
	node *fieldsNode
}

type valuedNode struct {
	value any
	node  *fieldsNode
}

// ownedFields returns the union of the fields the managers own in the live
// object, or nil when they own none. Entries the API server would not have
// written (malformed FieldsV1) are skipped.
func ownedFields(live map[string]any, managers []string) *fieldsNode {
	md, _ := live["metadata"].(map[string]any)
	entries, _ := md["managedFields"].([]any)
	var root *fieldsNode
	for _, e := range entries {
		entry, _ := e.(map[string]any)
		manager, _ := entry["manager"].(string)
		if !slices.Contains(managers, manager) {
			continue
		}
		fields := entry["fieldsV1"]
		if s, ok := fields.(string); ok { // FieldsV1 as raw JSON
			v, err := decodeJSON(s)
			if err != nil {
				continue
			}
			fields = v
		}
		obj, ok := fields.(map[string]any)
		if !ok {
			continue
		}
		if root == nil {
			root = &fieldsNode{}
		}
		root.merge(obj)
	}
	if root != nil && !root.whole && root.empty() {
		return nil
	}
	return root
}

func (n *fieldsNode) empty() bool {
	return len(n.fields) == 0 && len(n.keys) == 0 && len(n.values) == 0 && len(n.indexes) == 0
}

// merge adds one FieldsV1 object to the set.
func (n *fieldsNode) merge(obj map[string]any) {
	if n.whole {
		return
	}
	if len(obj) == 0 {
		*n = fieldsNode{whole: true}
		return
	}
	for k, v := range obj {
		child, _ := v.(map[string]any)
		prefix, rest, ok := strings.Cut(k, ":")
		if !ok {
			continue // "." marks the node itself; it owns nothing below
		}
		switch prefix {
		case "f":
			if n.fields == nil {
				n.fields = map[string]*fieldsNode{}
			}
			c := n.fields[rest]
			if c == nil {
				c = &fieldsNode{}
				n.fields[rest] = c
			}
			c.merge(child)
		case "k":
			key, err := decodeJSON(rest)
			km, ok := key.(map[string]any)
			if err != nil || !ok || len(km) == 0 {
				continue
			}
			c := n.keyed(km)
			c.merge(child)
		case "v":
			val, err := decodeJSON(rest)
			if err != nil {
				continue
			}
			c := &fieldsNode{}
			n.values = append(n.values, valuedNode{value: val, node: c})
			c.merge(child)
		case "i":
			i, err := strconv.Atoi(rest)
			if err != nil {
				continue
			}
			if n.indexes == nil {
				n.indexes = map[int]*fieldsNode{}
			}
			c := n.indexes[i]
			if c == nil {
				c = &fieldsNode{}
				n.indexes[i] = c
			}
			c.merge(child)
		}
	}
}

func (n *fieldsNode) keyed(key map[string]any) *fieldsNode {
	for _, k := range n.keys {
		if keyEqual(k.key, key) {
			return k.node
		}
	}
	c := &fieldsNode{}
	n.keys = append(n.keys, keyedNode{key: key, node: c})
	return c
}

func keyEqual(a, b map[string]any) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || !sameScalar(v, w) {
			return false
		}
	}
	return true
}

// owns reports whether the set owns the field at tokens, walked through the
// desired object root as the comparer walks it: map keys are "f:" fields, a
// list element is the "k:" entry whose key fields all equal the desired
// element's (for lists matched by name, k:{"name":...}), else its "v:"
// value or "i:" index.
func (n *fieldsNode) owns(root map[string]any, tokens []string) bool {
	var node any = root
	for _, tok := range tokens {
		if n.whole {
			return true
		}
		switch cur := node.(type) {
		case map[string]any:
			n, node = n.fields[tok], cur[tok]
		case []any:
			i, err := strconv.Atoi(tok)
			if err != nil || i < 0 || i >= len(cur) {
				return false
			}
			n, node = n.element(i, cur[i]), cur[i]
		default:
			return false
		}
		if n == nil {
			return false
		}
	}
	return n.whole
}

func (n *fieldsNode) element(i int, el any) *fieldsNode {
	if m, ok := el.(map[string]any); ok {
	keys:
		for _, k := range n.keys {
			for f, kv := range k.key {
				if ev, ok := m[f]; !ok || !sameScalar(kv, ev) {
					continue keys
				}
			}
			return k.node
		}
	} else {
		for _, v := range n.values {
			if sameScalar(v.value, el) {
				return v.node
			}
		}
	}
	return n.indexes[i]
}

// sameScalar is scalarEqual for values that may be objects or lists (which
// never match here).
func sameScalar(a, b any) bool {
	switch a.(type) {
	case map[string]any, []any:
		return false
	}
	switch b.(type) {
	case map[string]any, []any:
		return false
	}
	return scalarEqual(a, b)
}

// decodeJSON decodes JSON with numbers as unstructured objects hold them:
// int64 when integral, else float64.
func decodeJSON(s string) (any, error) {
	dec := json.NewDecoder(bytes.NewReader([]byte(s)))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	return JSONNumbers(v), nil
}

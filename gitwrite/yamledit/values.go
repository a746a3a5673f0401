package yamledit

import (
	"fmt"
	"sort"
	"strconv"

	yaml "github.com/driftguard/driftguard/third_party/yamlv3"

	"github.com/driftguard/driftguard/jsonvalue"
	"github.com/driftguard/driftguard/render"
)

// maxValues bounds what one document may expand to through aliases.
const maxValues = 1 << 20

// valueOf turns a node into a JSON-compatible value, as the guard's
// renderer does.
func valueOf(n *yaml.Node) (any, error) { return render.YAMLValue(n) }

// mergeSources returns the mappings a merge key's value names.
func mergeSources(v *yaml.Node) []*yaml.Node {
	v = resolve(v)
	if v.Kind == yaml.SequenceNode {
		out := make([]*yaml.Node, len(v.Content))
		for i, e := range v.Content {
			out[i] = resolve(e)
		}
		return out
	}
	return []*yaml.Node{v}
}

func isMergeKey(k *yaml.Node) bool {
	return k.Kind == yaml.ScalarNode && k.ShortTag() == "!!merge"
}

func resolve(n *yaml.Node) *yaml.Node {
	for n.Kind == yaml.AliasNode && n.Alias != nil {
		n = n.Alias
	}
	return n
}

// applyValue applies ops to a decoded object (a copy is modified).
// Deletions of list elements run last, highest index first, so that every
// index means the element of the original list.
func applyValue(obj any, ops []parsedOp) (any, error) {
	obj = jsonvalue.Copy(obj)
	var deletes []parsedOp
	for _, op := range ops {
		if op.Delete {
			deletes = append(deletes, op)
			continue
		}
		var err error
		if obj, err = setValue(obj, op.tokens, op.Value); err != nil {
			return nil, fmt.Errorf("pointer %q: %w", op.Pointer, err)
		}
	}
	sort.SliceStable(deletes, func(i, j int) bool { return tokensAfter(deletes[i].tokens, deletes[j].tokens) })
	for _, op := range deletes {
		var err error
		if obj, err = deleteValue(obj, op.tokens); err != nil {
			return nil, fmt.Errorf("pointer %q: %w", op.Pointer, err)
		}
	}
	return obj, nil
}

// tokensAfter orders pointers so that higher list indices come first.
func tokensAfter(a, b []string) bool {
	for i := 0; i < len(a) && i < len(b); i++ {
		if a[i] == b[i] {
			continue
		}
		ai, aerr := strconv.Atoi(a[i])
		bi, berr := strconv.Atoi(b[i])
		if aerr == nil && berr == nil {
			return ai > bi
		}
		return a[i] > b[i]
	}
	return len(a) > len(b)
}

func setValue(v any, tokens []string, val any) (any, error) {
	if len(tokens) == 0 {
		return jsonvalue.Copy(val), nil
	}
	switch x := v.(type) {
	case map[string]any:
		next, err := setValue(x[tokens[0]], tokens[1:], val)
		if err != nil {
			return nil, err
		}
		x[tokens[0]] = next
		return x, nil
	case []any:
		i, err := index(tokens[0], len(x))
		if err != nil {
			return nil, err
		}
		if x[i], err = setValue(x[i], tokens[1:], val); err != nil {
			return nil, err
		}
		return x, nil
	case nil:
		// A missing field: the path below it is created as objects.
		next, err := setValue(nil, tokens[1:], val)
		if err != nil {
			return nil, err
		}
		return map[string]any{tokens[0]: next}, nil
	}
	return nil, fmt.Errorf("%q is inside a %s, not an object or a list", tokens[0], jsonvalue.Name(v))
}

// deleteValue returns v without the field or element at tokens.
func deleteValue(v any, tokens []string) (any, error) {
	switch x := v.(type) {
	case map[string]any:
		e, ok := x[tokens[0]]
		if !ok {
			return nil, fmt.Errorf("no field %q", tokens[0])
		}
		if len(tokens) == 1 {
			delete(x, tokens[0])
			return x, nil
		}
		next, err := deleteValue(e, tokens[1:])
		if err != nil {
			return nil, err
		}
		x[tokens[0]] = next
		return x, nil
	case []any:
		i, err := index(tokens[0], len(x))
		if err != nil {
			return nil, err
		}
		if len(tokens) == 1 {
			return append(x[:i:i], x[i+1:]...), nil
		}
		next, err := deleteValue(x[i], tokens[1:])
		if err != nil {
			return nil, err
		}
		x[i] = next
		return x, nil
	}
	return nil, fmt.Errorf("%q is inside a %s, not an object or a list", tokens[0], jsonvalue.Name(v))
}

func index(tok string, n int) (int, error) {
	i, err := strconv.Atoi(tok)
	if err != nil || i < 0 || strconv.Itoa(i) != tok {
		return 0, fmt.Errorf("%q is not a list index", tok)
	}
	if i >= n {
		return 0, fmt.Errorf("index %d is out of range: the list has %d elements", i, n)
	}
	return i, nil
}

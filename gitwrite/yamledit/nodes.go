package yamledit

import (
	"fmt"
	"sort"
	"strconv"

	yaml "github.com/driftguard/driftguard/third_party/yamlv3"
)

// sortOps puts settings first and deletions after them, list elements
// highest index first, so that applied one after the other every index
// still means the element of the original list.
func sortOps(ops []parsedOp) []parsedOp {
	out := append([]parsedOp(nil), ops...)
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].Delete != out[j].Delete {
			return !out[i].Delete
		}
		if out[i].Delete {
			return tokensAfter(out[i].tokens, out[j].tokens)
		}
		return false
	})
	return out
}

// newNode encodes a value as a node. When it replaces old, it keeps old's
// quoting for a string and flow style for a collection.
func newNode(v any, old *yaml.Node) (*yaml.Node, error) {
	n := &yaml.Node{}
	if err := n.Encode(v); err != nil {
		return nil, fmt.Errorf("encode %v: %w", v, err)
	}
	if old == nil {
		return n, nil
	}
	old = resolve(old)
	const quoted = yaml.SingleQuotedStyle | yaml.DoubleQuotedStyle
	if old.Kind == yaml.ScalarNode && n.Kind == yaml.ScalarNode && old.ShortTag() == "!!str" && n.ShortTag() == "!!str" &&
		old.Style&quoted != 0 && n.Style&(yaml.LiteralStyle|yaml.FoldedStyle) == 0 {
		n.Style = old.Style & quoted
	}
	if old.Style&yaml.FlowStyle != 0 && (n.Kind == yaml.MappingNode || n.Kind == yaml.SequenceNode) {
		n.Style |= yaml.FlowStyle
	}
	return n, nil
}

// keyNode is a mapping key.
func keyNode(key string) *yaml.Node {
	n := &yaml.Node{}
	_ = n.Encode(key) // a string always encodes
	return n
}

// materialize returns a deep copy of what n is (through an alias), with
// aliases inside replaced by copies of what they name and without anchors
// or comments: an independent value that can be changed without changing
// anything else of the file.
func materialize(n *yaml.Node) *yaml.Node {
	count := 0
	var cp func(n *yaml.Node) *yaml.Node
	cp = func(n *yaml.Node) *yaml.Node {
		n = resolve(n)
		count++
		out := &yaml.Node{Kind: n.Kind, Style: n.Style, Tag: n.Tag, Value: n.Value, Line: n.Line, Column: n.Column}
		if count > maxValues {
			return out
		}
		for _, c := range n.Content {
			out.Content = append(out.Content, cp(c))
		}
		return out
	}
	return cp(n)
}

// mutateNode applies op (its tokens below n) to a node tree the caller owns.
func mutateNode(n *yaml.Node, tokens []string, op parsedOp) error {
	if n.Kind == yaml.AliasNode {
		*n = *materialize(n)
	}
	if len(tokens) == 0 {
		nv, err := newNode(op.Value, n)
		if err != nil {
			return err
		}
		nv.HeadComment, nv.LineComment, nv.FootComment = n.HeadComment, n.LineComment, n.FootComment
		*n = *nv
		return nil
	}
	tok, last := tokens[0], len(tokens) == 1
	switch n.Kind {
	case yaml.MappingNode:
		if i := findKey(n, tok); i >= 0 {
			if last && op.Delete {
				n.Content = append(n.Content[:i-1:i-1], n.Content[i+1:]...)
				return nil
			}
			return mutateNode(n.Content[i], tokens[1:], op)
		}
		if merged := findMerged(n, tok); merged != nil {
			if op.Delete {
				return fmt.Errorf("field %q comes from a merge key (<<) at line %d and cannot be deleted here", tok, merged.Line)
			}
			v := materialize(merged)
			if err := mutateNode(v, tokens[1:], op); err != nil {
				return err
			}
			n.Content = append(n.Content, keyNode(tok), v)
			return nil
		}
		if op.Delete {
			return fmt.Errorf("no field %q", tok)
		}
		v, err := buildNode(tokens[1:], op.Value)
		if err != nil {
			return err
		}
		n.Content = append(n.Content, keyNode(tok), v)
		return nil
	case yaml.SequenceNode:
		i, err := index(tok, len(n.Content))
		if err != nil {
			return err
		}
		if last && op.Delete {
			n.Content = append(n.Content[:i:i], n.Content[i+1:]...)
			return nil
		}
		return mutateNode(n.Content[i], tokens[1:], op)
	}
	return fmt.Errorf("%q is inside a %s at line %d, not an object or a list", tok, nodeKind(n), n.Line)
}

// buildNode makes the node for a value set below fields that do not exist:
// objects down to the value.
func buildNode(tokens []string, v any) (*yaml.Node, error) {
	if len(tokens) == 0 {
		return newNode(v, nil)
	}
	if _, err := strconv.Atoi(tokens[0]); err == nil {
		return nil, fmt.Errorf("no list to hold element %s", tokens[0])
	}
	inner, err := buildNode(tokens[1:], v)
	if err != nil {
		return nil, err
	}
	return &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map", Content: []*yaml.Node{keyNode(tokens[0]), inner}}, nil
}

func nodeKind(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "object"
	case yaml.SequenceNode:
		return "list"
	case yaml.AliasNode:
		return "alias"
	}
	switch n.ShortTag() {
	case "!!null":
		return "null"
	case "!!str":
		return "string"
	case "!!int", "!!float":
		return "number"
	case "!!bool":
		return "bool"
	}
	return "scalar"
}

func isCollection(n *yaml.Node) bool {
	return n.Kind == yaml.MappingNode || n.Kind == yaml.SequenceNode
}

func hasMergeKeys(n *yaml.Node) bool {
	if n.Kind == yaml.MappingNode {
		for i := 0; i+1 < len(n.Content); i += 2 {
			if isMergeKey(n.Content[i]) {
				return true
			}
		}
	}
	for _, c := range n.Content {
		if hasMergeKeys(c) {
			return true
		}
	}
	return false
}

package yamledit

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	yaml "github.com/driftguard/driftguard/third_party/yamlv3"
)

// layout is how a file indents: the width of one level, and whether list
// dashes under a key sit at the key's column (compact) or one level in.
type layout struct {
	unit    int
	compact bool
	nl      string
}

// detectLayout reads the indentation of the object's block collections.
func detectLayout(t *text, obj *yaml.Node) layout {
	l := layout{unit: 0, nl: t.nl}
	seenSeq := false
	var walk func(n *yaml.Node)
	walk = func(n *yaml.Node) {
		if n.Kind == yaml.MappingNode && n.Style&yaml.FlowStyle == 0 {
			for i := 0; i+1 < len(n.Content); i += 2 {
				k, v := n.Content[i], n.Content[i+1]
				if v.Style&yaml.FlowStyle != 0 || len(v.Content) == 0 || !isCollection(v) {
					continue
				}
				kc, vc := t.column(t.start(k)), t.column(t.valueStart(v))
				if v.Kind == yaml.MappingNode && l.unit == 0 && vc > kc {
					l.unit = vc - kc
				}
				if v.Kind == yaml.SequenceNode && !seenSeq {
					seenSeq, l.compact = true, vc == kc
				}
			}
		}
		for _, c := range n.Content {
			walk(c)
		}
	}
	walk(obj)
	if l.unit <= 0 || l.unit > 8 {
		l.unit = 2
	}
	return l
}

// encode renders a node as a YAML document, without the final newline.
func (l layout) encode(n *yaml.Node) (string, error) {
	var b bytes.Buffer
	enc := yaml.NewEncoder(&b)
	enc.SetIndent(l.unit)
	if l.compact {
		enc.CompactSeqIndent()
	}
	if err := enc.Encode(n); err != nil {
		return "", fmt.Errorf("render: %w", err)
	}
	if err := enc.Close(); err != nil {
		return "", fmt.Errorf("render: %w", err)
	}
	return strings.TrimSuffix(b.String(), "\n"), nil
}

// block renders a node in block style as lines.
func (l layout) block(n *yaml.Node) ([]string, error) {
	s, err := l.encode(withoutComments(n))
	if err != nil {
		return nil, err
	}
	return strings.Split(s, "\n"), nil
}

// inline renders a node to sit on one line: a scalar, or a collection in
// flow style. A string yaml would fold onto several lines is written as a
// JSON string, which YAML reads as a double-quoted one; a collection
// likewise as JSON. Only a collection with merge keys may take several
// lines.
func (l layout) inline(n *yaml.Node) (string, error) {
	n = withoutComments(n)
	if isCollection(n) {
		n.Style |= yaml.FlowStyle
	}
	s, err := l.encode(n)
	if err != nil {
		return "", err
	}
	if !strings.Contains(s, "\n") {
		return s, nil
	}
	if n.Kind == yaml.ScalarNode {
		return jsonString(n.Value), nil
	}
	if !hasMergeKeys(n) {
		var b strings.Builder
		if err := writeJSON(&b, n, "", "", ""); err != nil {
			return "", err
		}
		return b.String(), nil
	}
	return s, nil
}

// withoutComments returns a copy of n without comments, so that a rendered
// value never repeats comments that stay in the file around it.
func withoutComments(n *yaml.Node) *yaml.Node {
	out := *n
	out.HeadComment, out.LineComment, out.FootComment = "", "", ""
	if len(n.Content) > 0 {
		out.Content = make([]*yaml.Node, len(n.Content))
		for i, c := range n.Content {
			if c.Kind == yaml.AliasNode {
				out.Content[i] = c
				continue
			}
			out.Content[i] = withoutComments(c)
		}
	}
	return &out
}

// indentLines prefixes every line with indent spaces and joins them.
func indentLines(lines []string, indent int, nl string) string {
	pad := strings.Repeat(" ", indent)
	var b strings.Builder
	for i, line := range lines {
		if i > 0 {
			b.WriteString(nl)
		}
		if line != "" {
			b.WriteString(pad)
		}
		b.WriteString(line)
	}
	return b.String()
}

func jsonString(s string) string {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s) // a string always encodes
	return strings.TrimSuffix(b.String(), "\n")
}

// writeJSON writes a node tree as JSON, keys in their order. With unit ""
// it is compact; otherwise every level is indented by unit after prefix.
func writeJSON(b *strings.Builder, n *yaml.Node, prefix, unit, nl string) error {
	n = resolve(n)
	if nl == "" {
		nl = "\n"
	}
	newline := func(depth string) {
		if unit != "" {
			b.WriteString(nl)
			b.WriteString(prefix)
			b.WriteString(depth)
		}
	}
	var write func(n *yaml.Node, depth string) error
	write = func(n *yaml.Node, depth string) error {
		n = resolve(n)
		switch n.Kind {
		case yaml.DocumentNode:
			if len(n.Content) == 0 {
				b.WriteString("null")
				return nil
			}
			return write(n.Content[0], depth)
		case yaml.MappingNode:
			if len(n.Content) == 0 {
				b.WriteString("{}")
				return nil
			}
			b.WriteByte('{')
			for i := 0; i+1 < len(n.Content); i += 2 {
				if isMergeKey(n.Content[i]) {
					return fmt.Errorf("line %d: a merge key (<<) has no JSON form", n.Content[i].Line)
				}
				if i > 0 {
					b.WriteByte(',')
				}
				newline(depth + unit)
				b.WriteString(jsonString(resolve(n.Content[i]).Value))
				b.WriteByte(':')
				if unit != "" {
					b.WriteByte(' ')
				}
				if err := write(n.Content[i+1], depth+unit); err != nil {
					return err
				}
			}
			newline(depth)
			b.WriteByte('}')
		case yaml.SequenceNode:
			if len(n.Content) == 0 {
				b.WriteString("[]")
				return nil
			}
			b.WriteByte('[')
			for i, e := range n.Content {
				if i > 0 {
					b.WriteByte(',')
				}
				newline(depth + unit)
				if err := write(e, depth+unit); err != nil {
					return err
				}
			}
			newline(depth)
			b.WriteByte(']')
		case yaml.ScalarNode:
			s, err := jsonScalar(n)
			if err != nil {
				return err
			}
			b.WriteString(s)
		default:
			return fmt.Errorf("line %d: unsupported YAML node", n.Line)
		}
		return nil
	}
	return write(n, "")
}

// jsonScalar writes a scalar as JSON: a number keeps its text when that is
// valid JSON.
func jsonScalar(n *yaml.Node) (string, error) {
	v, err := valueOf(n)
	if err != nil {
		return "", err
	}
	switch x := v.(type) {
	case nil:
		return "null", nil
	case bool:
		if x {
			return "true", nil
		}
		return "false", nil
	case string:
		return jsonString(x), nil
	}
	if json.Valid([]byte(n.Value)) {
		return n.Value, nil
	}
	b, err := json.Marshal(v)
	if err != nil {
		return "", fmt.Errorf("line %d: %q has no JSON form: %w", n.Line, n.Value, err)
	}
	return string(b), nil
}

package sopsfile

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"strings"

	// A copy of go.yaml.in/yaml/v3 with a bound on the nodes it makes
	// (third_party/yamlv3/README.md).
	yaml "github.com/driftguard/driftguard/third_party/yamlv3"
)

// yamlFile is a SOPS-encrypted YAML stream: its documents as yaml nodes,
// which decryption rewrites in place, and the tree sops walks.
type yamlFile struct {
	docs     []*yaml.Node
	branches []*branch
	meta     any // the sops key of the first document, decoded
	count    int
	lim      *limits

	// comments holds the decrypted comment lines, applied once the walk
	// is done; listComments the list elements that decrypted to comments
	// (sops writes the comments of an encrypted list as elements).
	comments     map[commentRef]string
	listComments map[*yaml.Node]string
}

// commentRef is one line of a comment of a node.
type commentRef struct {
	node  *yaml.Node
	field commentField
	line  int
}

type commentField uint8

const (
	headComment commentField = iota
	lineComment
	footComment
)

func (f commentField) of(n *yaml.Node) *string {
	switch f {
	case headComment:
		return &n.HeadComment
	case lineComment:
		return &n.LineComment
	}
	return &n.FootComment
}

// loadYAML parses an encrypted YAML stream into the tree sops builds of it
// (its YAML store): each document a branch, comments as items, aliases
// expanded. The top-level sops keys are taken out.
func loadYAML(data []byte, lim *limits) (*yamlFile, error) {
	f := &yamlFile{comments: map[commentRef]string{}, listComments: map[*yaml.Node]string{}, lim: lim}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.SetMaxNodes(lim.MaxYAMLNodes)
	for {
		doc := &yaml.Node{}
		err := dec.Decode(doc)
		if errors.Is(err, io.EOF) {
			break
		}
		if nodes := (*yaml.NodeLimitError)(nil); errors.As(err, &nodes) {
			return nil, &LimitError{Limit: LimitYAMLNodes, Where: fmt.Sprintf("line %d", nodes.Line), Max: int64(nodes.Limit)}
		}
		if err != nil {
			return nil, fmt.Errorf("not valid YAML: %s", strings.TrimPrefix(err.Error(), "yaml: "))
		}
		items, err := f.appendBranch(doc, nil, false)
		if err != nil {
			return nil, err
		}
		b := &branch{items: items}
		if err := f.takeMetadata(doc, b, len(f.docs) == 0); err != nil {
			return nil, err
		}
		f.docs = append(f.docs, doc)
		f.branches = append(f.branches, b)
	}
	if f.meta == nil {
		return nil, errors.New("no sops metadata in the first document")
	}
	return f, nil
}

// takeMetadata removes the top-level sops keys of a document from its
// branch and from the YAML, keeping the first document's as metadata.
func (f *yamlFile) takeMetadata(doc *yaml.Node, b *branch, first bool) error {
	kept := b.items[:0]
	for _, it := range b.items {
		if it.comment == nil && it.key == "sops" {
			continue
		}
		kept = append(kept, it)
	}
	b.items = kept
	if len(doc.Content) == 0 || doc.Content[0].Kind != yaml.MappingNode {
		return nil
	}
	m := doc.Content[0]
	var content []*yaml.Node
	seen := false
	for i := 0; i+1 < len(m.Content); i += 2 {
		k, v := m.Content[i], m.Content[i+1]
		if k.Kind != yaml.ScalarNode || k.Value != "sops" || k.ShortTag() != "!!str" {
			content = append(content, k, v)
			continue
		}
		if !first {
			continue
		}
		if seen {
			return fmt.Errorf("line %d: a second sops key", k.Line)
		}
		seen = true
		if resolve(v).Kind != yaml.MappingNode {
			return fmt.Errorf("line %d: the sops key is not a mapping", k.Line)
		}
		var meta map[string]any
		if err := v.Decode(&meta); err != nil {
			return fmt.Errorf("line %d: sops metadata: %s", k.Line, strings.TrimPrefix(err.Error(), "yaml: "))
		}
		f.meta = meta
	}
	m.Content = content
	return nil
}

func resolve(n *yaml.Node) *yaml.Node {
	for i := 0; n.Kind == yaml.AliasNode && n.Alias != nil && i < 1000; i++ {
		n = n.Alias
	}
	return n
}

// comments appends the comment lines of one comment of n to a branch's
// items, as sops' YAML store does: a line each, without its #.
func (f *yamlFile) commentItems(items []item, n *yaml.Node, field commentField) []item {
	for _, l := range f.commentLeaves(n, field) {
		items = append(items, item{comment: l})
	}
	return items
}

func (f *yamlFile) commentElems(elems []any, n *yaml.Node, field commentField) []any {
	for _, l := range f.commentLeaves(n, field) {
		elems = append(elems, l)
	}
	return elems
}

func (f *yamlFile) commentLeaves(n *yaml.Node, field commentField) []*leaf {
	text := *field.of(n)
	if text == "" {
		return nil
	}
	var out []*leaf
	for i, line := range strings.Split(text, "\n") {
		if line == "" {
			continue
		}
		ref := commentRef{node: n, field: field, line: i}
		out = append(out, &leaf{value: line[1:], isComment: true, line: n.Line, set: func(v any) {
			f.comments[ref] = "#" + commentText(v)
		}})
	}
	return out
}

// commentText is the text of a decrypted comment.
func commentText(v any) string {
	switch v := v.(type) {
	case comment:
		return string(v)
	case []byte:
		return string(v)
	}
	b, _ := macBytes(v)
	return string(b)
}

// appendBranch adds the pairs and comments of a document or mapping to a
// branch, as sops' YAML store does; handled says the node's own comments
// were already added by its parent.
func (f *yamlFile) appendBranch(n *yaml.Node, items []item, handled bool) ([]item, error) {
	if !handled {
		items = f.commentItems(items, n, headComment)
		items = f.commentItems(items, n, lineComment)
	}
	switch n.Kind {
	case yaml.DocumentNode:
		for _, c := range n.Content {
			var err error
			if items, err = f.appendBranch(c, items, false); err != nil {
				return nil, err
			}
		}
	case yaml.SequenceNode:
		return nil, fmt.Errorf("line %d: a YAML document that is a list; SOPS files are mappings", n.Line)
	case yaml.MappingNode:
		if err := f.lim.enter(n.Line); err != nil {
			return nil, err
		}
		defer f.lim.leave()
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			items = f.commentItems(items, k, headComment)
			items = f.commentItems(items, k, lineComment)
			handle := v.Kind == yaml.ScalarNode || v.Kind == yaml.AliasNode
			if handle {
				items = f.commentItems(items, v, headComment)
				items = f.commentItems(items, v, lineComment)
			}
			key, err := yamlKey(k)
			if err != nil {
				return nil, err
			}
			if err := f.lim.addText(k.Line, len(key)); err != nil {
				return nil, err
			}
			val, err := f.value(v, handle)
			if err != nil {
				return nil, err
			}
			items = append(items, item{key: key, value: val})
			if handle {
				items = f.commentItems(items, v, footComment)
			}
			items = f.commentItems(items, k, footComment)
		}
	case yaml.ScalarNode:
		if n.ShortTag() == "!!null" {
			return items, nil
		}
		return nil, fmt.Errorf("line %d: a YAML document that is a single value; SOPS files are mappings", n.Line)
	case yaml.AliasNode:
		var err error
		if items, err = f.appendBranch(resolve(n), items, false); err != nil {
			return nil, err
		}
	}
	if !handled {
		items = f.commentItems(items, n, footComment)
	}
	return items, nil
}

// yamlKey decodes a mapping key; sops takes only strings.
func yamlKey(k *yaml.Node) (string, error) {
	if r := resolve(k); r.Kind == yaml.ScalarNode && r.ShortTag() == "!!str" {
		return r.Value, nil
	}
	var v any
	if err := k.Decode(&v); err == nil {
		if s, ok := v.(string); ok {
			return s, nil
		}
	}
	return "", fmt.Errorf("line %d: a mapping key that is not a string; SOPS takes only string keys", k.Line)
}

// value turns a node into a tree value, as sops' YAML store does.
func (f *yamlFile) value(n *yaml.Node, handled bool) (any, error) {
	f.count++
	if f.count > maxValues {
		return nil, errTooLarge
	}
	switch n.Kind {
	case yaml.SequenceNode:
		if err := f.lim.enter(n.Line); err != nil {
			return nil, err
		}
		defer f.lim.leave()
		l := &list{}
		if !handled {
			l.elems = f.commentElems(l.elems, n, headComment)
			l.elems = f.commentElems(l.elems, n, lineComment)
		}
		for _, e := range n.Content {
			l.elems = f.commentElems(l.elems, e, headComment)
			l.elems = f.commentElems(l.elems, e, lineComment)
			v, err := f.value(e, true)
			if err != nil {
				return nil, err
			}
			if lf, ok := v.(*leaf); ok && e.Kind == yaml.ScalarNode {
				lf.set = f.setListScalar(e)
			}
			l.elems = append(l.elems, v)
			l.elems = f.commentElems(l.elems, e, footComment)
		}
		if !handled {
			l.elems = f.commentElems(l.elems, n, footComment)
		}
		return l, nil
	case yaml.MappingNode:
		items, err := f.appendBranch(n, nil, handled)
		if err != nil {
			return nil, err
		}
		return &branch{items: items}, nil
	case yaml.ScalarNode:
		if err := f.lim.addText(n.Line, len(n.Value)); err != nil {
			return nil, err
		}
		var v any
		if n.ShortTag() == "!!str" {
			v = n.Value
		} else if err := n.Decode(&v); err != nil {
			return nil, fmt.Errorf("line %d: %s", n.Line, strings.TrimPrefix(err.Error(), "yaml: "))
		}
		if v == nil {
			return nil, nil
		}
		return &leaf{value: v, line: n.Line, set: func(v any) { setScalar(n, v) }}, nil
	case yaml.AliasNode:
		if n.Alias == nil {
			return nil, fmt.Errorf("line %d: an alias to an unknown anchor", n.Line)
		}
		return f.value(n.Alias, false)
	}
	return nil, nil
}

// setListScalar writes a decrypted list element; an element that
// decrypts to a comment becomes a comment again.
func (f *yamlFile) setListScalar(n *yaml.Node) func(any) {
	return func(v any) {
		if c, ok := v.(comment); ok {
			f.listComments[n] = "#" + string(c)
			return
		}
		setScalar(n, v)
	}
}

// setScalar writes a decrypted value into a scalar node, encoded as the
// YAML of its type, keeping the node's line and comments.
func setScalar(n *yaml.Node, v any) {
	switch x := v.(type) {
	case []byte:
		v = string(x)
	case comment:
		v = string(x)
	}
	var enc yaml.Node
	if err := enc.Encode(v); err != nil || enc.Kind != yaml.ScalarNode {
		enc = yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: commentText(v)}
	}
	n.Kind, n.Tag, n.Value, n.Style = enc.Kind, enc.Tag, enc.Value, enc.Style
}

// emit writes the decrypted comments into the nodes and encodes the
// documents.
func (f *yamlFile) emit() ([]byte, error) {
	byField := map[*string]map[int]string{}
	for ref, text := range f.comments {
		p := ref.field.of(ref.node)
		if byField[p] == nil {
			byField[p] = map[int]string{}
		}
		byField[p][ref.line] = text
	}
	for p, lines := range byField {
		parts := strings.Split(*p, "\n")
		for i, text := range lines {
			if i < len(parts) {
				parts[i] = text
			}
		}
		*p = strings.Join(parts, "\n")
	}
	if len(f.listComments) > 0 {
		for _, d := range f.docs {
			f.restoreListComments(d)
		}
	}
	var buf bytes.Buffer
	enc := yaml.NewEncoder(&buf)
	enc.SetIndent(2)
	for _, d := range f.docs {
		if len(d.Content) == 0 {
			continue
		}
		if err := enc.Encode(d); err != nil {
			return nil, fmt.Errorf("write the decrypted YAML: %w", err)
		}
	}
	if err := enc.Close(); err != nil {
		return nil, fmt.Errorf("write the decrypted YAML: %w", err)
	}
	return buf.Bytes(), nil
}

// restoreListComments turns the list elements that decrypted to comments
// back into comments of the element that follows them (or of the last).
func (f *yamlFile) restoreListComments(n *yaml.Node) {
	for _, c := range n.Content {
		f.restoreListComments(c)
	}
	if n.Kind != yaml.SequenceNode {
		return
	}
	var kept []*yaml.Node
	var pending []string
	for _, e := range n.Content {
		if c, ok := f.listComments[e]; ok {
			pending = append(pending, c)
			continue
		}
		if len(pending) > 0 {
			e.HeadComment = joinComment(strings.Join(pending, "\n"), e.HeadComment)
			pending = nil
		}
		kept = append(kept, e)
	}
	if len(pending) > 0 {
		if len(kept) > 0 {
			last := kept[len(kept)-1]
			last.FootComment = joinComment(last.FootComment, strings.Join(pending, "\n"))
		} else {
			n.HeadComment = joinComment(n.HeadComment, strings.Join(pending, "\n"))
		}
	}
	n.Content = kept
}

func joinComment(a, b string) string {
	if a == "" || b == "" {
		return a + b
	}
	return a + "\n" + b
}

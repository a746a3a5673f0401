package yamledit

import (
	"errors"
	"fmt"
	"sort"
	"strings"

	yaml "github.com/driftguard/driftguard/third_party/yamlv3"
)

// editYAML applies ops to a YAML file by replacing the text of the changed
// nodes only.
func editYAML(data []byte, target Target, ops []parsedOp) ([]byte, error) {
	docs, err := parseYAML(data)
	if err != nil {
		return nil, err
	}
	obj, err := locate(docs, target)
	if err != nil {
		return nil, err
	}
	t := newText(data)
	e := &editor{
		t:         t,
		target:    obj.node,
		aliased:   aliasTargets(docs),
		layout:    detectLayout(t, obj.node),
		rerenders: map[*yaml.Node]*rerender{},
		deletes:   map[*yaml.Node]*deletion{},
		inserts:   map[*yaml.Node]*insertion{},
	}
	for _, op := range sortOps(ops) {
		if err := e.apply(op); err != nil {
			return nil, fmt.Errorf("pointer %q: %w", op.Pointer, err)
		}
	}
	return e.finish()
}

// step is one move down the tree: into parent.Content[pos] (for a mapping,
// the value; its key is at pos-1).
type step struct {
	parent *yaml.Node
	pos    int
}

// editor collects the text replacements that apply ops.
type editor struct {
	t       *text
	target  *yaml.Node
	aliased map[*yaml.Node]bool
	layout  layout

	splices []splice
	// rerenders are nodes written anew from an edited copy: aliases and
	// flow collections with a change inside.
	rerenders map[*yaml.Node]*rerender
	rerOrder  []*yaml.Node
	// deletes are the removed entries of each collection.
	deletes  map[*yaml.Node]*deletion
	delOrder []*yaml.Node
	// inserts are keys added to a block mapping.
	inserts  map[*yaml.Node]*insertion
	insOrder []*yaml.Node
}

type rerender struct {
	path []step
	node *yaml.Node // the original
	copy *yaml.Node // edited
}

type deletion struct {
	path      []step // down to the collection
	coll      *yaml.Node
	positions map[int]bool
}

type insertion struct {
	mapping *yaml.Node
	keys    []string
	values  map[string]*yaml.Node
}

// splice replaces src[start:end] with text.
type splice struct {
	start, end int
	text       string
}

func (e *editor) apply(op parsedOp) error {
	n := e.target
	var path []step
	for i, tok := range op.tokens {
		if n.Kind == yaml.AliasNode || (isCollection(n) && n.Style&yaml.FlowStyle != 0) {
			return e.rerender(n, path, op.tokens[i:], op)
		}
		if err := e.notShared(n); err != nil {
			return err
		}
		switch n.Kind {
		case yaml.MappingNode:
			vi := findKey(n, tok)
			if vi < 0 {
				return e.insert(n, tok, op.tokens[i+1:], op)
			}
			path = append(path, step{parent: n, pos: vi})
			n = n.Content[vi]
		case yaml.SequenceNode:
			idx, err := index(tok, len(n.Content))
			if err != nil {
				return fmt.Errorf("line %d: %w", n.Line, err)
			}
			path = append(path, step{parent: n, pos: idx})
			n = n.Content[idx]
		default:
			return fmt.Errorf("%q is inside a %s at line %d, not an object or a list", tok, nodeKind(n), n.Line)
		}
	}
	if err := e.notShared(n); err != nil {
		return err
	}
	if op.Delete {
		last := path[len(path)-1]
		d := e.deletes[last.parent]
		if d == nil {
			d = &deletion{path: append([]step(nil), path[:len(path)-1]...), coll: last.parent, positions: map[int]bool{}}
			e.deletes[last.parent] = d
			e.delOrder = append(e.delOrder, last.parent)
		}
		d.positions[last.pos] = true
		return nil
	}
	nv, err := newNode(op.Value, n)
	if err != nil {
		return err
	}
	return e.replace(path, n, nv, false)
}

// notShared refuses to change a node an alias elsewhere refers to: the
// change would show there too.
func (e *editor) notShared(n *yaml.Node) error {
	if n.Anchor != "" && e.aliased[n] {
		return fmt.Errorf("the value at line %d is the anchor &%s, which aliases elsewhere in the file repeat; changing it would change them too: edit the file by hand", n.Line, n.Anchor)
	}
	return nil
}

// rerender records a change below an alias or inside a flow collection:
// that node is written anew from an edited copy.
func (e *editor) rerender(n *yaml.Node, path []step, rest []string, op parsedOp) error {
	if err := e.notShared(n); err != nil {
		return err
	}
	r := e.rerenders[n]
	if r == nil {
		cp := materialize(n)
		if n.Kind != yaml.AliasNode {
			cp.Style = n.Style
		}
		r = &rerender{path: append([]step(nil), path...), node: n, copy: cp}
		e.rerenders[n] = r
		e.rerOrder = append(e.rerOrder, n)
	}
	if err := mutateNode(r.copy, rest, op); err != nil {
		return fmt.Errorf("line %d: %w", n.Line, err)
	}
	return nil
}

// insert records a key added to a block mapping: one that only a merge key
// (<<) gives, which an explicit copy then overrides, or one that is missing.
func (e *editor) insert(m *yaml.Node, key string, rest []string, op parsedOp) error {
	in := e.inserts[m]
	if in == nil {
		in = &insertion{mapping: m, values: map[string]*yaml.Node{}}
		e.inserts[m] = in
		e.insOrder = append(e.insOrder, m)
	}
	if v := in.values[key]; v != nil {
		return mutateNode(v, rest, op)
	}
	merged := findMerged(m, key)
	if op.Delete {
		if merged != nil {
			return fmt.Errorf("field %q comes from the merge key (<<) of the mapping at line %d and cannot be deleted there: edit the file by hand", key, m.Line)
		}
		return fmt.Errorf("no field %q in the mapping at line %d", key, m.Line)
	}
	var v *yaml.Node
	var err error
	if merged != nil {
		v = materialize(merged)
		if len(rest) == 0 {
			v, err = newNode(op.Value, merged)
		} else {
			err = mutateNode(v, rest, op)
		}
	} else {
		v, err = buildNode(rest, op.Value)
	}
	if err != nil {
		return err
	}
	in.keys = append(in.keys, key)
	in.values[key] = v
	return nil
}

// indicatorEnd returns where the value at path's end may be rewritten from:
// past the node's anchor (which stays), else past the ":" of its key or the
// "-" of its list element.
func (e *editor) indicatorEnd(st step, old *yaml.Node) (int, error) {
	if a := e.t.anchorEnd(old); a >= 0 {
		return a, nil
	}
	if st.parent.Kind == yaml.MappingNode {
		ind, err := e.t.blockIndent(st.parent)
		if err != nil {
			return 0, err
		}
		return e.t.colonEnd(st.parent.Content[st.pos-1], ind)
	}
	d, err := e.t.dash(old)
	if err != nil {
		return 0, err
	}
	return d + 1, nil
}

// replace records the replacement of old, reached through path, by nv.
// inline forces nv onto old's line (an alias or a flow collection).
func (e *editor) replace(path []step, old, nv *yaml.Node, inline bool) error {
	if len(path) == 0 {
		// The object itself, written in flow style.
		end, err := e.t.end(old, -1)
		if err != nil {
			return err
		}
		s, err := e.layout.inline(nv)
		if err != nil {
			return err
		}
		e.splices = append(e.splices, splice{start: e.t.valueStart(old), end: end, text: s})
		return nil
	}
	st := path[len(path)-1]
	pind, err := e.t.blockIndent(st.parent)
	if err != nil {
		return err
	}
	end, err := e.t.end(old, pind)
	if err != nil {
		return err
	}
	nl := e.layout.nl
	oldBlock := isCollection(old) && old.Style&yaml.FlowStyle == 0
	if !inline && oldBlock && isCollection(nv) && len(nv.Content) > 0 {
		// A block collection stays one, at the indentation it had.
		nv.Style &^= yaml.FlowStyle
		lines, err := e.layout.block(nv)
		if err != nil {
			return err
		}
		start := e.t.valueStart(old)
		ind := e.t.column(start)
		if nv.Kind == yaml.MappingNode && st.parent.Kind == yaml.MappingNode && ind <= pind {
			ind = pind + e.layout.unit
		}
		if st.parent.Kind == yaml.MappingNode {
			e.splices = append(e.splices, splice{start: e.t.lineStart(start), end: end, text: indentLines(lines, ind, nl)})
			return nil
		}
		e.splices = append(e.splices, splice{start: start, end: end, text: lines[0] + nl + indentLines(lines[1:], ind, nl)})
		return nil
	}
	from, err := e.indicatorEnd(st, old)
	if err != nil {
		return err
	}
	if nv.Kind == yaml.ScalarNode && nv.ShortTag() == "!!str" && strings.Contains(nv.Value, "\n") && !inline && e.t.restOfLineBlank(end) {
		// A multi-line string as a literal block, indented one level in.
		nv.Style = yaml.LiteralStyle
		lines, err := e.layout.block(nv)
		if err != nil {
			return err
		}
		e.splices = append(e.splices, splice{start: from, end: end, text: " " + lines[0] + nl + indentLines(lines[1:], pind, nl)})
		return nil
	}
	s, err := e.layout.inline(nv)
	if err != nil {
		return err
	}
	if strings.Contains(s, "\n") {
		s = strings.Join(strings.Split(s, "\n"), nl+strings.Repeat(" ", pind+e.layout.unit))
	}
	e.splices = append(e.splices, splice{start: from, end: end, text: " " + s})
	return nil
}

// finish turns the collected changes into text and applies them.
func (e *editor) finish() ([]byte, error) {
	for _, coll := range e.delOrder {
		if err := e.finishDeletion(e.deletes[coll]); err != nil {
			return nil, err
		}
	}
	for _, n := range e.rerOrder {
		r := e.rerenders[n]
		if err := e.replace(r.path, r.node, r.copy, true); err != nil {
			return nil, err
		}
	}
	for _, m := range e.insOrder {
		if err := e.finishInsertion(e.inserts[m]); err != nil {
			return nil, err
		}
	}
	sort.SliceStable(e.splices, func(i, j int) bool {
		if e.splices[i].start != e.splices[j].start {
			return e.splices[i].start < e.splices[j].start
		}
		return e.splices[i].end < e.splices[j].end
	})
	for i := 1; i < len(e.splices); i++ {
		a, b := e.splices[i-1], e.splices[i]
		if b.start < a.end {
			return nil, fmt.Errorf("changes at lines %d and %d overlap: edit the file by hand", e.lineOf(a.start), e.lineOf(b.start))
		}
	}
	var b strings.Builder
	src := e.t.src
	prev := 0
	for _, s := range e.splices {
		b.Write(src[prev:s.start])
		b.WriteString(s.text)
		prev = s.end
	}
	b.Write(src[prev:])
	return []byte(b.String()), nil
}

func (e *editor) lineOf(off int) int {
	return sort.Search(len(e.t.lines), func(i int) bool { return e.t.lines[i] > off })
}

// finishDeletion removes the deleted entries of one collection: their whole
// lines. A collection left empty becomes {} or [].
func (e *editor) finishDeletion(d *deletion) error {
	c := d.coll
	entries := len(c.Content)
	if c.Kind == yaml.MappingNode {
		entries /= 2
	}
	if len(d.positions) == entries {
		if len(d.path) == 0 {
			return errors.New("the change would delete every field of the object")
		}
		empty := &yaml.Node{Kind: c.Kind, Tag: c.Tag, Style: yaml.FlowStyle}
		return e.replace(d.path, c, empty, false)
	}
	ind, err := e.t.blockIndent(c)
	if err != nil {
		return err
	}
	positions := make([]int, 0, len(d.positions))
	for p := range d.positions {
		positions = append(positions, p)
	}
	sort.Ints(positions)
	if c.Kind == yaml.SequenceNode {
		for _, p := range positions {
			item := c.Content[p]
			dash, err := e.t.dash(item)
			if err != nil {
				return err
			}
			if !e.t.firstOnLine(dash) {
				return fmt.Errorf("the list element at line %d shares its line with other content: edit the file by hand", item.Line)
			}
			end, err := e.t.end(item, ind)
			if err != nil {
				return err
			}
			e.splices = append(e.splices, splice{start: e.t.lineStart(dash), end: e.t.afterLine(end)})
		}
		return nil
	}
	for k := 0; k < len(positions); k++ {
		p := positions[k]
		key := c.Content[p-1]
		if e.t.firstOnLine(e.t.start(key)) {
			end, err := e.t.end(c.Content[p], ind)
			if err != nil {
				return err
			}
			e.splices = append(e.splices, splice{start: e.t.lineStart(e.t.start(key)), end: e.t.afterLine(end)})
			continue
		}
		// The first key of a list element ("- name: x"): the next key that
		// stays moves up onto the dash's line.
		next := p + 2
		for next < len(c.Content) && d.positions[next] {
			next += 2
			k++
		}
		if next >= len(c.Content) {
			return fmt.Errorf("the mapping at line %d would lose every field", c.Line)
		}
		e.splices = append(e.splices, splice{start: e.t.start(key), end: e.t.start(c.Content[next-1])})
	}
	return nil
}

// finishInsertion adds keys after the last entry of a block mapping, at its
// indentation.
func (e *editor) finishInsertion(in *insertion) error {
	m := in.mapping
	ind, err := e.t.blockIndent(m)
	if err != nil {
		return err
	}
	end, err := e.t.end(m.Content[len(m.Content)-1], ind)
	if err != nil {
		return err
	}
	at := e.t.afterLine(end)
	nl := e.layout.nl
	var b strings.Builder
	if at == len(e.t.src) && (at == 0 || e.t.src[at-1] != '\n') {
		b.WriteString(nl)
	}
	for _, k := range in.keys {
		pair := &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map", Content: []*yaml.Node{keyNode(k), in.values[k]}}
		lines, err := e.layout.block(pair)
		if err != nil {
			return err
		}
		b.WriteString(indentLines(lines, ind, nl))
		b.WriteString(nl)
	}
	e.splices = append(e.splices, splice{start: at, end: at, text: b.String()})
	return nil
}

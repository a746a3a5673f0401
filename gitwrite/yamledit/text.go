package yamledit

import (
	"bytes"
	"fmt"
	"unicode/utf8"

	yaml "github.com/driftguard/driftguard/third_party/yamlv3"
)

// text is a file's bytes with the offsets of its lines, to turn the
// line/column positions of yaml nodes into byte ranges.
type text struct {
	src   []byte
	lines []int // byte offset where each line starts; lines[0] is line 1
	nl    string
}

func newText(src []byte) *text {
	t := &text{src: src, lines: []int{0}, nl: "\n"}
	for i, b := range src {
		if b == '\n' {
			t.lines = append(t.lines, i+1)
		}
	}
	if bytes.Contains(src, []byte("\r\n")) {
		t.nl = "\r\n"
	}
	return t
}

// offset returns the byte offset of a 1-based line and column (columns
// count characters, as the YAML parser does).
func (t *text) offset(line, col int) int {
	if line < 1 {
		return 0
	}
	if line > len(t.lines) {
		return len(t.src)
	}
	off := t.lines[line-1]
	for c := 1; c < col && off < len(t.src) && t.src[off] != '\n'; c++ {
		_, size := utf8.DecodeRune(t.src[off:])
		off += size
	}
	return off
}

// start is the offset where a node's text begins (its anchor or tag, if any).
func (t *text) start(n *yaml.Node) int { return t.offset(n.Line, n.Column) }

// lineStart returns the offset of the start of the line holding off.
func (t *text) lineStart(off int) int {
	for off > 0 && t.src[off-1] != '\n' {
		off--
	}
	return off
}

// lineEnd returns the offset of the newline (or the end of the file) of the
// line holding off, before a carriage return.
func (t *text) lineEnd(off int) int {
	for off < len(t.src) && t.src[off] != '\n' {
		off++
	}
	if off > 0 && t.src[off-1] == '\r' {
		off--
	}
	return off
}

// afterLine returns the offset just past the newline of the line holding
// off (the end of the file on the last line).
func (t *text) afterLine(off int) int {
	for off < len(t.src) && t.src[off] != '\n' {
		off++
	}
	if off < len(t.src) {
		off++
	}
	return off
}

// column returns the 0-based character column of off.
func (t *text) column(off int) int {
	return utf8.RuneCount(t.src[t.lineStart(off):off])
}

// firstOnLine reports whether only blanks precede off on its line.
func (t *text) firstOnLine(off int) bool {
	for i := t.lineStart(off); i < off; i++ {
		if t.src[i] != ' ' && t.src[i] != '\t' {
			return false
		}
	}
	return true
}

// restOfLineBlank reports whether nothing but blanks follows off on its line.
func (t *text) restOfLineBlank(off int) bool {
	for i := off; i < len(t.src) && t.src[i] != '\n'; i++ {
		if t.src[i] != ' ' && t.src[i] != '\t' && t.src[i] != '\r' {
			return false
		}
	}
	return true
}

func isBlank(b byte) bool { return b == ' ' || b == '\t' }

// skipProperties moves past a node's anchor (&name) and tag (!tag), and the
// blanks, comments and line breaks after them, to where its value begins.
func (t *text) skipProperties(n *yaml.Node, off int) int {
	if n.Anchor == "" && n.Style&yaml.TaggedStyle == 0 {
		return off
	}
	for off < len(t.src) {
		switch c := t.src[off]; {
		case c == '&' || c == '!':
			for off < len(t.src) && !isBlank(t.src[off]) && t.src[off] != '\n' && t.src[off] != '\r' {
				off++
			}
		case isBlank(c) || c == '\n' || c == '\r':
			off++
		case c == '#':
			off = t.afterLine(off)
		default:
			return off
		}
	}
	return off
}

// anchorEnd returns the offset just past a node's anchor, or -1 when it has
// none.
func (t *text) anchorEnd(n *yaml.Node) int {
	if n.Anchor == "" {
		return -1
	}
	off := t.start(n)
	if off >= len(t.src) || t.src[off] != '&' {
		return -1
	}
	for off < len(t.src) && !isBlank(t.src[off]) && t.src[off] != '\n' && t.src[off] != '\r' {
		off++
	}
	return off
}

// valueStart is the offset where a node's value begins.
func (t *text) valueStart(n *yaml.Node) int {
	if isImplicitNull(n) {
		return t.implicitNullEnd(n)
	}
	return t.skipProperties(n, t.start(n))
}

// isImplicitNull reports a value that is not written at all ("key:").
func isImplicitNull(n *yaml.Node) bool {
	return n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null" && n.Value == "" && n.Style&^yaml.TaggedStyle == 0
}

// implicitNullEnd is where an unwritten value ends: after its anchor or tag
// on the same line, if any.
func (t *text) implicitNullEnd(n *yaml.Node) int {
	off := t.start(n)
	end := off
	for off < len(t.src) {
		switch c := t.src[off]; {
		case c == '&' || c == '!':
			for off < len(t.src) && !isBlank(t.src[off]) && t.src[off] != '\n' && t.src[off] != '\r' {
				off++
			}
			end = off
		case isBlank(c):
			off++
		default:
			return end
		}
	}
	return end
}

// end returns the offset just past the last character of a node's value
// (comments after it are not part of it). indent is the indentation of the
// block collection the node is in (-1 at the top level).
func (t *text) end(n *yaml.Node, indent int) (int, error) {
	switch n.Kind {
	case yaml.AliasNode:
		off := t.start(n)
		if off >= len(t.src) || t.src[off] != '*' {
			return 0, fmt.Errorf("line %d: alias *%s not found in the text", n.Line, n.Value)
		}
		off++
		for off < len(t.src) && !isBlank(t.src[off]) && t.src[off] != '\n' && t.src[off] != '\r' && t.src[off] != ',' && t.src[off] != ']' && t.src[off] != '}' {
			off++
		}
		return off, nil
	case yaml.ScalarNode:
		return t.scalarEnd(n, indent)
	case yaml.MappingNode, yaml.SequenceNode:
		if n.Style&yaml.FlowStyle != 0 {
			return t.flowEnd(n)
		}
		if len(n.Content) == 0 {
			return 0, fmt.Errorf("line %d: empty block collection", n.Line)
		}
		last := n.Content[len(n.Content)-1]
		inner, err := t.blockIndent(n)
		if err != nil {
			return 0, err
		}
		return t.end(last, inner)
	}
	return 0, fmt.Errorf("line %d: unsupported YAML node", n.Line)
}

// blockIndent returns the indentation (0-based column) of a block
// collection: the column of its keys, or of its dashes.
func (t *text) blockIndent(n *yaml.Node) (int, error) {
	if len(n.Content) == 0 {
		return 0, fmt.Errorf("line %d: empty block collection", n.Line)
	}
	if n.Kind == yaml.MappingNode {
		return t.column(t.start(n.Content[0])), nil
	}
	dash, err := t.dash(n.Content[0])
	if err != nil {
		return 0, err
	}
	return t.column(dash), nil
}

// dash returns the offset of the "-" indicator of a block sequence element.
func (t *text) dash(item *yaml.Node) (int, error) {
	off := t.start(item)
	for i := off - 1; i >= 0; i-- {
		switch c := t.src[i]; {
		case c == '-':
			return i, nil
		case isBlank(c) || c == '\n' || c == '\r':
		default:
			return 0, fmt.Errorf("line %d: no \"-\" before the list element", item.Line)
		}
	}
	return 0, fmt.Errorf("line %d: no \"-\" before the list element", item.Line)
}

func (t *text) scalarEnd(n *yaml.Node, indent int) (int, error) {
	if isImplicitNull(n) {
		return t.implicitNullEnd(n), nil
	}
	off := t.valueStart(n)
	if off >= len(t.src) {
		return off, nil
	}
	switch {
	case n.Style&yaml.DoubleQuotedStyle != 0:
		for i := off + 1; i < len(t.src); i++ {
			switch t.src[i] {
			case '\\':
				i++
			case '"':
				return i + 1, nil
			}
		}
		return 0, fmt.Errorf("line %d: unterminated double-quoted string", n.Line)
	case n.Style&yaml.SingleQuotedStyle != 0:
		for i := off + 1; i < len(t.src); i++ {
			if t.src[i] == '\'' {
				if i+1 < len(t.src) && t.src[i+1] == '\'' {
					i++
					continue
				}
				return i + 1, nil
			}
		}
		return 0, fmt.Errorf("line %d: unterminated single-quoted string", n.Line)
	case n.Style&(yaml.LiteralStyle|yaml.FoldedStyle) != 0:
		return t.blockScalarEnd(n, off, indent)
	}
	return t.plainEnd(n, off)
}

// plainEnd finds the end of a plain scalar: its first line up to a comment,
// and the continuation lines that fold into its value.
func (t *text) plainEnd(n *yaml.Node, off int) (int, error) {
	end := t.plainLineEnd(off)
	folded := string(t.src[off:end])
	for folded != n.Value {
		if len(folded) >= len(n.Value) {
			return 0, fmt.Errorf("line %d: cannot find the end of the plain scalar %q", n.Line, n.Value)
		}
		// The value continues on the next non-empty line; empty lines in
		// between fold into line breaks.
		next := t.afterLine(end)
		breaks := 0
		for next < len(t.src) && t.restOfLineBlank(next) {
			breaks++
			next = t.afterLine(next)
		}
		if next >= len(t.src) {
			return 0, fmt.Errorf("line %d: cannot find the end of the plain scalar %q", n.Line, n.Value)
		}
		for next < len(t.src) && isBlank(t.src[next]) {
			next++
		}
		if breaks > 0 {
			folded += stringsRepeat("\n", breaks)
		} else {
			folded += " "
		}
		end = t.plainLineEnd(next)
		folded += string(t.src[next:end])
	}
	return end, nil
}

func stringsRepeat(s string, n int) string {
	var b bytes.Buffer
	for range n {
		b.WriteString(s)
	}
	return b.String()
}

// plainLineEnd is the end of a plain scalar's text on the line of off: at
// a comment or the end of the line, without trailing blanks.
func (t *text) plainLineEnd(off int) int {
	i := off
	for i < len(t.src) && t.src[i] != '\n' {
		if t.src[i] == '#' && i > off && isBlank(t.src[i-1]) {
			break
		}
		if t.src[i] == ':' && (i+1 == len(t.src) || isBlank(t.src[i+1]) || t.src[i+1] == '\n' || t.src[i+1] == '\r') {
			// ": " ends a key; a value cannot hold it.
			break
		}
		i++
	}
	for i > off && (isBlank(t.src[i-1]) || t.src[i-1] == '\r') {
		i--
	}
	return i
}

// blockScalarEnd finds the end of a literal (|) or folded (>) scalar: the
// last non-empty line indented more than the collection it is in.
func (t *text) blockScalarEnd(n *yaml.Node, off, indent int) (int, error) {
	header := off
	for header < len(t.src) && (t.src[header] == '|' || t.src[header] == '>' || t.src[header] == '+' || t.src[header] == '-' || (t.src[header] >= '1' && t.src[header] <= '9')) {
		header++
	}
	end := header
	contentIndent := -1
	for line := t.afterLine(off); line < len(t.src); line = t.afterLine(line) {
		if t.restOfLineBlank(line) {
			continue
		}
		ind := 0
		for line+ind < len(t.src) && t.src[line+ind] == ' ' {
			ind++
		}
		if contentIndent < 0 {
			if ind <= indent {
				break
			}
			contentIndent = ind
		}
		if ind < contentIndent {
			break
		}
		end = t.lineEnd(line)
	}
	return end, nil
}

// flowEnd finds the bracket that closes a flow collection.
func (t *text) flowEnd(n *yaml.Node) (int, error) {
	off := t.valueStart(n)
	depth := 0
	for i := off; i < len(t.src); i++ {
		switch c := t.src[i]; c {
		case '[', '{':
			depth++
		case ']', '}':
			depth--
			if depth == 0 {
				return i + 1, nil
			}
		case '"':
			for i++; i < len(t.src) && t.src[i] != '"'; i++ {
				if t.src[i] == '\\' {
					i++
				}
			}
		case '\'':
			for i++; i < len(t.src); i++ {
				if t.src[i] == '\'' {
					if i+1 < len(t.src) && t.src[i+1] == '\'' {
						i++
						continue
					}
					break
				}
			}
		case '#':
			if i > 0 && (isBlank(t.src[i-1]) || t.src[i-1] == '\n') {
				i = t.lineEnd(i)
			}
		}
	}
	return 0, fmt.Errorf("line %d: unterminated flow collection", n.Line)
}

// colonEnd returns the offset just past the ":" after a mapping key.
func (t *text) colonEnd(key *yaml.Node, indent int) (int, error) {
	off, err := t.end(key, indent)
	if err != nil {
		return 0, err
	}
	for off < len(t.src) && isBlank(t.src[off]) {
		off++
	}
	if off >= len(t.src) || t.src[off] != ':' {
		return 0, fmt.Errorf("line %d: no \":\" after the key %q", key.Line, key.Value)
	}
	return off + 1, nil
}

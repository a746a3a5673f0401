package yamledit

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	yaml "github.com/driftguard/driftguard/third_party/yamlv3"
)

// jsonValue is one top-level value of a JSON file.
type jsonValue struct {
	start, end int // byte range in the file
	node       *yaml.Node
}

// splitJSON finds the top-level values of a JSON file (usually one) and
// parses each into a node tree with lines absolute in the file.
func splitJSON(data []byte) ([]jsonValue, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	var out []jsonValue
	prev := 0
	for {
		var raw json.RawMessage
		err := dec.Decode(&raw)
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, fmt.Errorf("line %d: %w", bytes.Count(data[:min(int(dec.InputOffset()), len(data))], []byte("\n"))+1, err)
		}
		end := int(dec.InputOffset())
		start := prev
		for start < end && strings.ContainsRune(" \t\r\n", rune(data[start])) {
			start++
		}
		prev = end
		// JSON may indent with tabs, which YAML does not allow; outside
		// strings they are plain white space, and inside strings JSON
		// has no raw tabs.
		src := bytes.ReplaceAll(data[start:end], []byte("\t"), []byte(" "))
		var doc yaml.Node
		nodes := yaml.NewDecoder(bytes.NewReader(src))
		nodes.SetMaxNodes(maxValues)
		if err := nodes.Decode(&doc); err != nil {
			return nil, fmt.Errorf("line %d: %s", bytes.Count(data[:start], []byte("\n"))+1, strings.TrimPrefix(err.Error(), "yaml: "))
		}
		shiftLines(&doc, bytes.Count(data[:start], []byte("\n")))
		out = append(out, jsonValue{start: start, end: end, node: &doc})
	}
}

func shiftLines(n *yaml.Node, by int) {
	n.Line += by
	for _, c := range n.Content {
		shiftLines(c, by)
	}
}

// editJSON applies ops to the object's value and writes that value anew,
// with the indentation it had; the rest of the file stays as it was.
func editJSON(data []byte, target Target, ops []parsedOp) ([]byte, error) {
	values, err := splitJSON(data)
	if err != nil {
		return nil, err
	}
	docs := make([]*yaml.Node, len(values))
	for i, v := range values {
		docs[i] = v.node
	}
	obj, err := locate(docs, target)
	if err != nil {
		return nil, err
	}
	for _, op := range sortOps(ops) {
		if err := mutateNode(obj.node, op.tokens, op); err != nil {
			return nil, fmt.Errorf("pointer %q: %w", op.Pointer, err)
		}
	}
	v := values[obj.doc]
	prefix, unit := jsonIndent(data, v.start, v.end)
	nl := "\n"
	if bytes.Contains(data[v.start:v.end], []byte("\r\n")) {
		nl = "\r\n"
	}
	var b strings.Builder
	if err := writeJSON(&b, v.node, prefix, unit, nl); err != nil {
		return nil, err
	}
	out := make([]byte, 0, len(data)+b.Len())
	out = append(out, data[:v.start]...)
	out = append(out, b.String()...)
	return append(out, data[v.end:]...), nil
}

// jsonIndent returns the white space before the value on its first line and
// the indentation of one level inside it ("" when the value is on one line).
func jsonIndent(data []byte, start, end int) (prefix, unit string) {
	ls := start
	for ls > 0 && data[ls-1] != '\n' {
		ls--
	}
	prefix = leadingBlanks(data[ls:start])
	raw := data[start:end]
	i := bytes.IndexByte(raw, '\n')
	if i < 0 {
		return prefix, ""
	}
	inner := leadingBlanks(raw[i+1:])
	unit = strings.TrimPrefix(inner, prefix)
	if unit == inner && prefix != "" {
		unit = "  "
	}
	return prefix, unit
}

func leadingBlanks(b []byte) string {
	i := 0
	for i < len(b) && (b[i] == ' ' || b[i] == '\t') {
		i++
	}
	return string(b[:i])
}

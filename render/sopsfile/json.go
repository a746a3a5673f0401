package sopsfile

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
)

// jsonValue is a value of a JSON file in its order, which decryption
// rewrites in place.
type jsonValue struct {
	kind   byte // '{', '[' or 0 for a scalar
	keys   []string
	values []*jsonValue
	tok    any // a scalar as read: string, json.Number, bool or nil
	plain  any // the decrypted value, when set
	set    bool
	drop   bool // decrypted to a comment: left out of lists
}

// jsonFile is a SOPS-encrypted JSON file: one object, with a top-level
// sops key.
type jsonFile struct {
	data  []byte
	dec   *json.Decoder
	root  *jsonValue
	tree  *branch
	meta  any
	count int
	lim   *limits
	// line counting, for errors
	lineOff int
	line    int
}

// loadJSON parses an encrypted JSON file into the tree sops builds of it
// (its JSON store): numbers are ints when they are integers within int64,
// floats otherwise. The top-level sops key is taken out.
func loadJSON(data []byte, lim *limits) (*jsonFile, error) {
	f := &jsonFile{data: data, dec: json.NewDecoder(bytes.NewReader(data)), line: 1, lim: lim}
	f.dec.UseNumber()
	tok, err := f.dec.Token()
	if err != nil {
		return nil, f.syntax(err)
	}
	if tok != json.Delim('{') {
		return nil, errors.New("not a JSON object; SOPS files are objects")
	}
	if err := f.lim.enter(1); err != nil {
		return nil, err
	}
	f.root, f.tree, err = f.object()
	if err != nil {
		return nil, err
	}
	if _, err := f.dec.Token(); !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("line %d: more JSON after the top-level object", f.lineAt(int(f.dec.InputOffset())))
	}
	// Take the sops key out of the object and the tree.
	var keys []string
	var values []*jsonValue
	for i, k := range f.root.keys {
		if k != "sops" {
			keys, values = append(keys, k), append(values, f.root.values[i])
			continue
		}
		if f.meta != nil {
			return nil, errors.New("a second sops key")
		}
		f.meta = f.root.values[i].generic()
	}
	f.root.keys, f.root.values = keys, values
	kept := f.tree.items[:0]
	for _, it := range f.tree.items {
		if it.key != "sops" {
			kept = append(kept, it)
		}
	}
	f.tree.items = kept
	if f.meta == nil {
		return nil, errors.New("no sops metadata")
	}
	return f, nil
}

// lineAt returns the line of a byte offset; offsets only grow.
func (f *jsonFile) lineAt(off int) int {
	off = min(off, len(f.data))
	if off > f.lineOff {
		f.line += bytes.Count(f.data[f.lineOff:off], []byte("\n"))
		f.lineOff = off
	}
	return f.line
}

func (f *jsonFile) syntax(err error) error {
	var se *json.SyntaxError
	if errors.As(err, &se) {
		return fmt.Errorf("not valid JSON: line %d: %v", f.lineAt(int(se.Offset)), se)
	}
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return errors.New("not valid JSON: unexpected end")
	}
	return fmt.Errorf("not valid JSON: %v", err)
}

func (f *jsonFile) next() (json.Token, int, error) {
	tok, err := f.dec.Token()
	if err != nil {
		return nil, 0, f.syntax(err)
	}
	return tok, f.lineAt(int(f.dec.InputOffset())), nil
}

// value reads the value that starts with tok.
func (f *jsonFile) value(tok json.Token, line int) (*jsonValue, any, error) {
	f.count++
	if f.count > maxValues {
		return nil, nil, errTooLarge
	}
	switch t := tok.(type) {
	case json.Delim:
		if t != '{' && t != '[' {
			return nil, nil, fmt.Errorf("not valid JSON: line %d: unexpected %q", line, t)
		}
		if err := f.lim.enter(line); err != nil {
			return nil, nil, err
		}
		defer f.lim.leave()
		if t == '{' {
			v, b, err := f.object()
			return v, b, err
		}
		return f.array()
	case nil:
		return &jsonValue{}, nil, nil
	case string:
		if err := f.lim.addText(line, len(t)); err != nil {
			return nil, nil, err
		}
	}
	v := &jsonValue{tok: tok}
	plain := tok
	if n, ok := tok.(json.Number); ok {
		if i, err := strconv.ParseInt(string(n), 10, 64); err == nil {
			plain = int(i)
		} else if x, err := n.Float64(); err == nil {
			plain = x
		} else {
			return nil, nil, fmt.Errorf("line %d: number out of range", line)
		}
	}
	return v, &leaf{value: plain, line: line, set: func(p any) {
		if c, ok := p.(comment); ok {
			// Only in a YAML list may a comment stand for a value: in
			// a JSON list it is left out, elsewhere kept as a string.
			v.plain, v.set, v.drop = string(c), true, true
			return
		}
		v.plain, v.set = p, true
	}}, nil
}

func (f *jsonFile) object() (*jsonValue, *branch, error) {
	obj, b := &jsonValue{kind: '{'}, &branch{}
	for {
		tok, line, err := f.next()
		if err != nil {
			return nil, nil, err
		}
		if tok == json.Delim('}') {
			return obj, b, nil
		}
		key, ok := tok.(string)
		if !ok {
			return nil, nil, fmt.Errorf("not valid JSON: line %d: an object key that is not a string", line)
		}
		if err := f.lim.addText(line, len(key)); err != nil {
			return nil, nil, err
		}
		tok, line, err = f.next()
		if err != nil {
			return nil, nil, err
		}
		v, node, err := f.value(tok, line)
		if err != nil {
			return nil, nil, err
		}
		obj.keys, obj.values = append(obj.keys, key), append(obj.values, v)
		b.items = append(b.items, item{key: key, value: node})
	}
}

func (f *jsonFile) array() (*jsonValue, any, error) {
	arr, l := &jsonValue{kind: '['}, &list{}
	for {
		tok, line, err := f.next()
		if err != nil {
			return nil, nil, err
		}
		if tok == json.Delim(']') {
			return arr, l, nil
		}
		v, node, err := f.value(tok, line)
		if err != nil {
			return nil, nil, err
		}
		arr.values = append(arr.values, v)
		l.elems = append(l.elems, node)
	}
}

// generic is v as maps, lists and scalars, for the metadata.
func (v *jsonValue) generic() any {
	switch v.kind {
	case '{':
		m := make(map[string]any, len(v.keys))
		for i, k := range v.keys {
			m[k] = v.values[i].generic()
		}
		return m
	case '[':
		l := make([]any, len(v.values))
		for i, e := range v.values {
			l[i] = e.generic()
		}
		return l
	}
	if n, ok := v.tok.(json.Number); ok {
		if i, err := strconv.ParseInt(string(n), 10, 64); err == nil {
			return int(i)
		}
		x, _ := n.Float64()
		return x
	}
	return v.tok
}

// emit writes the decrypted JSON.
func (f *jsonFile) emit() ([]byte, error) {
	var buf bytes.Buffer
	if err := f.root.write(&buf); err != nil {
		return nil, fmt.Errorf("write the decrypted JSON: %w", err)
	}
	var out bytes.Buffer
	if err := json.Indent(&out, buf.Bytes(), "", "  "); err != nil {
		return nil, fmt.Errorf("write the decrypted JSON: %w", err)
	}
	out.WriteByte('\n')
	return out.Bytes(), nil
}

func (v *jsonValue) write(buf *bytes.Buffer) error {
	switch v.kind {
	case '{':
		buf.WriteByte('{')
		for i, k := range v.keys {
			if i > 0 {
				buf.WriteByte(',')
			}
			if err := writeJSON(buf, k); err != nil {
				return err
			}
			buf.WriteByte(':')
			if err := v.values[i].write(buf); err != nil {
				return err
			}
		}
		buf.WriteByte('}')
		return nil
	case '[':
		buf.WriteByte('[')
		first := true
		for _, e := range v.values {
			if e.drop {
				continue
			}
			if !first {
				buf.WriteByte(',')
			}
			first = false
			if err := e.write(buf); err != nil {
				return err
			}
		}
		buf.WriteByte(']')
		return nil
	}
	if v.set {
		p := v.plain
		if b, ok := p.([]byte); ok {
			p = string(b)
		}
		return writeJSON(buf, p)
	}
	if n, ok := v.tok.(json.Number); ok {
		buf.WriteString(string(n))
		return nil
	}
	return writeJSON(buf, v.tok)
}

func writeJSON(buf *bytes.Buffer, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	buf.Write(b)
	return nil
}

package render

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
)

// decodeJSON decodes every top-level value of a JSON file (usually one; a
// stream of values is accepted). Numbers become int64 when integral, float64
// otherwise; duplicate object keys are an error. The limits bound the
// nesting depth and the text of the whole file (a *LimitError at the line
// where it happened).
func decodeJSON(data []byte, lim Limits) ([]document, error) {
	d := &jsonDecoder{data: data, dec: json.NewDecoder(bytes.NewReader(data)), lim: lim}
	d.dec.UseNumber()
	var docs []document
	for {
		start := d.nextStart()
		tok, err := d.dec.Token()
		if errors.Is(err, io.EOF) {
			return docs, nil
		}
		if err != nil {
			return nil, d.wrap(err)
		}
		doc := document{line: d.lineAt(start)}
		doc.value, err = d.value(tok, start, func(key string, arr bool) bool { return arr && key == "items" }, &doc.itemLines)
		if err != nil {
			return nil, err
		}
		docs = append(docs, doc)
	}
}

type jsonDecoder struct {
	data  []byte
	dec   *json.Decoder
	lim   Limits
	depth int   // objects and arrays open
	text  int64 // bytes of keys and strings
	nodes int   // values and keys decoded
	// lineOff and line: the line of offset lineOff, where lineAt last
	// counted to (offsets only grow while decoding).
	lineOff, line int
}

// enter opens an object or array that starts at offset start, within the
// nesting limit.
func (d *jsonDecoder) enter(start int) error {
	if d.depth++; d.depth > d.lim.MaxDepth {
		return &lineError{line: d.lineAt(start), err: depthError(d.lim.MaxDepth)}
	}
	return nil
}

// addNode counts a decoded value or key, within the limit (MaxYAMLNodes,
// as the YAML parser's: a 3-byte {} takes about 60 bytes of heap).
func (d *jsonDecoder) addNode(start int) error {
	if d.nodes++; d.nodes > d.lim.MaxYAMLNodes {
		return &lineError{line: d.lineAt(start), err: nodesError(d.lim.MaxYAMLNodes)}
	}
	return nil
}

// addText counts decoded text, within the limit.
func (d *jsonDecoder) addText(start, size int) error {
	if d.text += int64(size); d.text > d.lim.MaxDecodedBytes {
		return &lineError{line: d.lineAt(start), err: decodedError(d.lim.MaxDecodedBytes)}
	}
	return nil
}

// nextStart returns the offset of the next token: the decoder's offset moved
// past whitespace and separators.
func (d *jsonDecoder) nextStart() int {
	off := int(d.dec.InputOffset())
	for off < len(d.data) {
		switch d.data[off] {
		case ' ', '\t', '\r', '\n', ',', ':':
			off++
			continue
		}
		break
	}
	return off
}

// lineAt is the line of offset off, counted on from the last offset asked
// (each newline is counted once while decoding goes forward, not again
// from the start for every value).
func (d *jsonDecoder) lineAt(off int) int {
	off = min(off, len(d.data))
	if off < d.lineOff {
		d.lineOff, d.line = 0, 0
	}
	d.line += bytes.Count(d.data[d.lineOff:off], []byte("\n"))
	d.lineOff = off
	return d.line + 1
}

// wrap gives a decoding error the line it happened at.
func (d *jsonDecoder) wrap(err error) error {
	var le *lineError
	if errors.As(err, &le) {
		return err
	}
	var se *json.SyntaxError
	if errors.As(err, &se) {
		return &lineError{line: d.lineAt(int(se.Offset)), err: se}
	}
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		end := len(bytes.TrimRight(d.data, " \t\r\n"))
		return &lineError{line: d.lineAt(max(end-1, 0)), err: errors.New("unexpected end of JSON input")}
	}
	return &lineError{line: d.lineAt(int(d.dec.InputOffset())), err: err}
}

// value builds the value that starts with tok. When track reports true for a
// member of the top-level object, the lines of that array's elements are
// stored in lines.
func (d *jsonDecoder) value(tok json.Token, start int, track func(key string, arr bool) bool, lines *[]int) (any, error) {
	if err := d.addNode(start); err != nil {
		return nil, err
	}
	switch t := tok.(type) {
	case json.Delim:
		if t != '{' && t != '[' {
			return nil, d.wrap(fmt.Errorf("unexpected %q", t))
		}
		if err := d.enter(start); err != nil {
			return nil, err
		}
		defer func() { d.depth-- }()
		if t == '{' {
			return d.object(track, lines)
		}
		return d.array(lines)
	case string:
		if err := d.addText(start, len(t)); err != nil {
			return nil, err
		}
		return t, nil
	case json.Number:
		if i, err := strconv.ParseInt(string(t), 10, 64); err == nil {
			return i, nil
		}
		f, err := t.Float64()
		if err != nil {
			return nil, d.wrap(fmt.Errorf("number %s: %w", t, err))
		}
		return f, nil
	default: // string, bool, nil
		return t, nil
	}
}

func (d *jsonDecoder) object(track func(string, bool) bool, lines *[]int) (map[string]any, error) {
	out := map[string]any{}
	for {
		start := d.nextStart()
		tok, err := d.dec.Token()
		if err != nil {
			return nil, d.wrap(err)
		}
		if tok == json.Delim('}') {
			return out, nil
		}
		key, ok := tok.(string)
		if !ok {
			return nil, d.wrap(fmt.Errorf("object key %v is not a string", tok))
		}
		if _, dup := out[key]; dup {
			return nil, &lineError{line: d.lineAt(start), err: fmt.Errorf("duplicate map key %q", key)}
		}
		if err := d.addText(start, len(key)); err != nil {
			return nil, err
		}
		if err := d.addNode(start); err != nil {
			return nil, err
		}
		start = d.nextStart()
		tok, err = d.dec.Token()
		if err != nil {
			return nil, d.wrap(err)
		}
		var itemLines *[]int
		if track != nil && track(key, tok == json.Delim('[')) {
			itemLines = lines
		}
		v, err := d.value(tok, start, nil, itemLines)
		if err != nil {
			return nil, err
		}
		out[key] = v
	}
}

// array decodes an array; when lines is not nil it receives the line of
// every element.
func (d *jsonDecoder) array(lines *[]int) ([]any, error) {
	out := []any{}
	for {
		start := d.nextStart()
		tok, err := d.dec.Token()
		if err != nil {
			return nil, d.wrap(err)
		}
		if tok == json.Delim(']') {
			return out, nil
		}
		if lines != nil {
			*lines = append(*lines, d.lineAt(start))
		}
		v, err := d.value(tok, start, nil, nil)
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
}

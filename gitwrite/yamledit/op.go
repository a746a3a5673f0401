package yamledit

import (
	"fmt"
	"path"
	"strings"

	"github.com/driftguard/driftguard/drift"
)

// Op is one change to an object: set the value at Pointer, or delete it.
type Op struct {
	// Pointer is an RFC 6901 JSON pointer into the object, as drift.Change
	// paths are: list elements are addressed by their index in the file's
	// list.
	Pointer string
	// Value is the new value, JSON-compatible: nil, bool, int64, float64,
	// string, []any or map[string]any.
	Value any
	// Delete removes the field or list element instead.
	Delete bool
}

// Target names the object to edit in a file.
type Target struct {
	// Line is the 1-based line where the object's document, or its element
	// of a List's items, starts: render.Source.Line.
	Line int
	// Kind and Name, when set, must be those of the object at Line; when no
	// object starts at Line (the file changed), the one object with this
	// kind, name and Namespace is edited.
	Kind, Name, Namespace string
}

func (t Target) String() string {
	var b strings.Builder
	if t.Kind != "" {
		b.WriteString(t.Kind + " ")
	}
	if t.Namespace != "" {
		b.WriteString(t.Namespace + "/")
	}
	b.WriteString(t.Name)
	if t.Line > 0 {
		fmt.Fprintf(&b, " (line %d)", t.Line)
	}
	return strings.TrimSpace(b.String())
}

// Edit applies ops to the object target names in a manifest file and
// returns the new content of the file. file names the file in errors; a
// name ending in .json is edited as JSON, any other as YAML. Errors name the
// file, the line and the pointer at fault.
func Edit(file string, data []byte, target Target, ops []Op) ([]byte, error) {
	if len(ops) == 0 {
		return data, nil
	}
	parsed := make([]parsedOp, len(ops))
	for i, op := range ops {
		tokens, err := drift.ParsePointer(op.Pointer)
		if err != nil {
			return nil, fmt.Errorf("%s: pointer %q: %w", file, op.Pointer, err)
		}
		if len(tokens) == 0 {
			return nil, fmt.Errorf("%s: pointer %q: the whole object cannot be replaced", file, op.Pointer)
		}
		parsed[i] = parsedOp{Op: op, tokens: tokens}
	}
	if err := checkNested(parsed); err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	var out []byte
	var err error
	if strings.EqualFold(path.Ext(file), ".json") {
		out, err = editJSON(data, target, parsed)
	} else {
		out, err = editYAML(data, target, parsed)
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	if err := verify(file, data, out, target, parsed); err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	return out, nil
}

// parsedOp is an Op with its pointer split into reference tokens.
type parsedOp struct {
	Op
	tokens []string
}

// checkNested refuses two ops of which one is inside the other: their
// result would depend on their order.
func checkNested(ops []parsedOp) error {
	for i := range ops {
		for j := range ops {
			if i != j && isPrefix(ops[i].tokens, ops[j].tokens) {
				return fmt.Errorf("pointers %q and %q overlap", ops[i].Pointer, ops[j].Pointer)
			}
		}
	}
	return nil
}

func isPrefix(a, b []string) bool {
	if len(a) > len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

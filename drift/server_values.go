package drift

import (
	"github.com/driftguard/driftguard/jsonvalue"
)

// ServerValues are, by JSON pointer, the values the API server stores for
// fields Git sets where they differ from Git's text: what defaulting,
// normalization, schema pruning or a mutating webhook made of them. They come
// from the object the server returned for applying Git's object (a real apply
// or a server-side dry run) and make the comparison mean "applying Git would
// change nothing" rather than "the live text equals Git's text".
type ServerValues map[string]serverValue

type serverValue struct {
	value  any
	absent bool // the server does not keep the field at all
}

// ServerValuesOf compares desired with applied, the object the API server
// returned for applying desired, and keeps every difference as a server
// value. Nil when the server kept Git's values as they are.
func ServerValuesOf(desired, applied map[string]any, opts Options) ServerValues {
	changes := Compare(desired, applied, opts)
	if len(changes) == 0 {
		return nil
	}
	sv := make(ServerValues, len(changes))
	for _, c := range changes {
		sv[c.Path] = serverValue{value: c.Live, absent: c.Missing}
	}
	return sv
}

// Filter drops the changes whose live side is exactly what the server makes
// of Git's value; what is left is drift. It returns changes itself when sv
// is empty.
func (sv ServerValues) Filter(changes []Change) []Change {
	if len(sv) == 0 || len(changes) == 0 {
		return changes
	}
	var out []Change
	for _, c := range changes {
		if v, ok := sv[c.Path]; ok && v.absent == c.Missing && (v.absent || jsonvalue.Equal(v.value, c.Live)) {
			continue
		}
		out = append(out, c)
	}
	return out
}

// WithoutDroppedEmpty drops the changes where Git sets an empty value (false,
// 0, "", {} or []) that the cluster lacks: what the API server drops from
// omitempty fields. It is for callers without the server values of an apply
// or dry run (adopting live values into Git, say), which must not read such a
// field as removed; with server values, Filter says it exactly.
func WithoutDroppedEmpty(changes []Change) []Change {
	var out []Change
	for _, c := range changes {
		if c.Missing && isEmpty(c.Desired) {
			continue
		}
		out = append(out, c)
	}
	return out
}

func isEmpty(v any) bool {
	switch x := v.(type) {
	case map[string]any:
		return len(x) == 0
	case []any:
		return len(x) == 0
	case string:
		return x == ""
	case bool:
		return !x
	}
	n, ok := jsonvalue.Number(v)
	return ok && n == 0
}

// Package jsonvalue is the one home of what the guard needs of decoded JSON
// and YAML values (map[string]any, []any, string, bool, nil, and numbers of
// any Go type a decoder yields): how two are compared, how a number is read,
// how a kind is named in an error, and how one is copied. drift compares
// Git with the cluster with it, yamledit checks its edits with it, health
// and policy name the kinds of wrong values with it.
package jsonvalue

import (
	"encoding/json"
	"fmt"
	"math"
	"reflect"
)

// Number reads v as a number: the Go integer and float types decoders
// yield. It is false for anything else (a string holding digits too).
func Number(v any) (float64, bool) {
	switch n := v.(type) {
	case int:
		return float64(n), true
	case int32:
		return float64(n), true
	case int64:
		return float64(n), true
	case float32:
		return float64(n), true
	case float64:
		return n, true
	}
	return 0, false
}

// Equal compares two decoded values: numbers by value whatever their Go
// type (8 and 8.0 are equal), objects key by key, arrays element by element.
// NaN equals NaN, so that every value equals itself (YAML can hold .nan;
// JSON cannot). Values of other types are compared with reflect.DeepEqual.
func Equal(a, b any) bool {
	if an, ok := Number(a); ok {
		bn, ok := Number(b)
		return ok && (an == bn || (math.IsNaN(an) && math.IsNaN(bn)))
	}
	switch x := a.(type) {
	case map[string]any:
		y, ok := b.(map[string]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for k, xv := range x {
			yv, ok := y[k]
			if !ok || !Equal(xv, yv) {
				return false
			}
		}
		return true
	case []any:
		y, ok := b.([]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for i := range x {
			if !Equal(x[i], y[i]) {
				return false
			}
		}
		return true
	}
	return reflect.DeepEqual(a, b)
}

// Name names the type of v in a word: "null", "object", "list", "string",
// "bool", "number", or its Go type.
func Name(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case map[string]any:
		return "object"
	case []any:
		return "list"
	case string:
		return "string"
	case bool:
		return "bool"
	case json.Number:
		return "number"
	}
	if _, ok := Number(v); ok {
		return "number"
	}
	return fmt.Sprintf("%T", v)
}

// kinds are the phrases of Kind for the words of Name.
var kinds = map[string]string{
	"null": "null", "object": "an object", "list": "an array",
	"string": "a string", "bool": "a boolean", "number": "a number",
}

// Kind names the kind of v for an error message: "null", "a boolean",
// "a string", "an object", "an array", "a number", or "a" and its Go type.
func Kind(v any) string {
	n := Name(v)
	if k, ok := kinds[n]; ok {
		return k
	}
	return "a " + n
}

// Copy copies v deeply: its objects and arrays are new, so that changing the
// copy leaves v as it was. Other values are returned as they are.
func Copy(v any) any {
	switch x := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = Copy(e)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = Copy(e)
		}
		return out
	}
	return v
}

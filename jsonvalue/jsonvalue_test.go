package jsonvalue

import (
	"encoding/json"
	"math"
	"testing"
)

func TestEqual(t *testing.T) {
	nan := math.NaN()
	tests := []struct {
		name string
		a, b any
		want bool
	}{
		{"int and float", int64(1), float64(1), true},
		{"int and int32", 8, int32(8), true},
		{"float32 and float64", float32(0.5), 0.5, true},
		{"different numbers", 1, 2, false},
		{"NaN equals NaN", nan, nan, true},
		{"NaN of two types", float32(nan), nan, true},
		{"NaN and a number", nan, 1.0, false},
		{"number and string", "1", int64(1), false},
		{"number and nil", 0, nil, false},
		{"strings", "a", "a", true},
		{"different strings", "a", "b", false},
		{"booleans", true, true, true},
		{"objects, numbers by value", map[string]any{"a": int64(1)}, map[string]any{"a": float64(1)}, true},
		{"object with one key more", map[string]any{"a": int64(1)}, map[string]any{"a": int64(1), "b": nil}, false},
		{"object and array", map[string]any{}, []any{}, false},
		{"arrays", []any{"x", 1}, []any{"x", 1.0}, true},
		{"arrays of two lengths", []any{"x"}, []any{"x", "y"}, false},
		{"arrays in another order", []any{"x", "y"}, []any{"y", "x"}, false},
		{"nested NaN", map[string]any{"a": []any{nan}}, map[string]any{"a": []any{nan}}, true},
		{"null", nil, nil, true},
		{"null and empty string", nil, "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Equal(tt.a, tt.b); got != tt.want {
				t.Errorf("Equal(%v, %v) = %v, want %v", tt.a, tt.b, got, tt.want)
			}
			if got := Equal(tt.b, tt.a); got != tt.want {
				t.Errorf("Equal(%v, %v) = %v, want %v (not symmetric)", tt.b, tt.a, got, tt.want)
			}
		})
	}
}

func TestNumber(t *testing.T) {
	tests := []struct {
		v    any
		want float64
		ok   bool
	}{
		{1, 1, true},
		{int32(-2), -2, true},
		{int64(1 << 40), 1 << 40, true},
		{float32(0.25), 0.25, true},
		{1.5, 1.5, true},
		{"1", 0, false},
		{json.Number("1"), 0, false},
		{nil, 0, false},
		{true, 0, false},
	}
	for _, tt := range tests {
		got, ok := Number(tt.v)
		if got != tt.want || ok != tt.ok {
			t.Errorf("Number(%#v) = %v, %v; want %v, %v", tt.v, got, ok, tt.want, tt.ok)
		}
	}
}

func TestKind(t *testing.T) {
	tests := []struct {
		v    any
		want string
	}{
		{nil, "null"},
		{false, "a boolean"},
		{"x", "a string"},
		{map[string]any{}, "an object"},
		{[]any{}, "an array"},
		{1, "a number"},
		{int64(1), "a number"},
		{2.5, "a number"},
		{json.Number("3"), "a number"},
		{[]string{"x"}, "a []string"},
	}
	for _, tt := range tests {
		if got := Kind(tt.v); got != tt.want {
			t.Errorf("Kind(%#v) = %q, want %q", tt.v, got, tt.want)
		}
	}
}

func TestName(t *testing.T) {
	tests := []struct {
		v    any
		want string
	}{
		{nil, "null"},
		{map[string]any{}, "object"},
		{[]any{}, "list"},
		{"x", "string"},
		{true, "bool"},
		{int64(1), "number"},
		{1.5, "number"},
		{3, "number"},
		{json.Number("3"), "number"},
		{[]string{"x"}, "[]string"},
	}
	for _, tt := range tests {
		if got := Name(tt.v); got != tt.want {
			t.Errorf("Name(%#v) = %q, want %q", tt.v, got, tt.want)
		}
	}
}

func TestCopy(t *testing.T) {
	orig := map[string]any{"a": []any{map[string]any{"b": 1}}, "c": "d"}
	cp := Copy(orig).(map[string]any)
	if !Equal(orig, cp) {
		t.Fatalf("copy %v differs from %v", cp, orig)
	}
	cp["a"].([]any)[0].(map[string]any)["b"] = 2
	cp["c"] = "e"
	if orig["a"].([]any)[0].(map[string]any)["b"] != 1 || orig["c"] != "d" {
		t.Fatalf("changing the copy changed the original: %v", orig)
	}
	if Copy("x") != "x" || Copy(nil) != nil {
		t.Fatal("a scalar copies as itself")
	}
}

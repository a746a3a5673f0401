package drift

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/big"
	"strconv"
	"time"

	"github.com/itchyny/gojq"
)

// Limits on one jq path expression over one object, so a careless rule
// (`path(repeat(.))`, `path(range(1e9))`) cannot stall a comparison.
const (
	jqTimeout  = 200 * time.Millisecond
	jqMaxPaths = 10000
)

// jqExpr is a compiled jq path expression.
type jqExpr struct {
	src   string
	field string // ignore[i].jqPathExpressions[j], for messages
	code  *gojq.Code
}

func compileJQ(src string) (*jqExpr, error) {
	q, err := gojq.Parse(src)
	if err != nil {
		return nil, err
	}
	if len(q.Imports) > 0 || q.Meta != nil {
		return nil, errors.New("modules are not supported")
	}
	// path(EXPR): the expression's paths, not its values.
	wrapped := &gojq.Query{Term: &gojq.Term{Type: gojq.TermTypeFunc, Func: &gojq.Func{Name: "path", Args: []*gojq.Query{q}}}}
	code, err := gojq.Compile(wrapped,
		// Keep evaluation pure: no environment ($ENV, env), no inputs.
		gojq.WithEnvironLoader(func() []string { return nil }),
	)
	if err != nil {
		return nil, err
	}
	return &jqExpr{src: src, code: code}, nil
}

// paths runs the expression against desired and returns the paths it yields
// as reference tokens. A runtime error (or a panic inside the evaluator) is
// returned, naming the rule, and yields no paths.
func (e *jqExpr) paths(desired map[string]any) (out [][]string, err error) {
	defer func() {
		if r := recover(); r != nil {
			out, err = nil, fmt.Errorf("%s %q: evaluation failed: %v", e.field, e.src, r)
		}
	}()
	input := jqValue(desired)
	ctx, cancel := context.WithTimeout(context.Background(), jqTimeout)
	defer cancel()
	iter := e.code.RunWithContext(ctx, input)
	for {
		v, ok := iter.Next()
		if !ok {
			return out, nil
		}
		if verr, ok := v.(error); ok {
			var halt *gojq.HaltError
			if errors.As(verr, &halt) && halt.Value() == nil {
				return out, nil // halt: stop without error
			}
			return nil, fmt.Errorf("%s %q: %w", e.field, e.src, verr)
		}
		p, ok := v.([]any)
		if !ok {
			return nil, fmt.Errorf("%s %q: path() yielded %T", e.field, e.src, v)
		}
		expanded, perr := jqTokens(input, p)
		if perr != nil {
			return nil, fmt.Errorf("%s %q: %w", e.field, e.src, perr)
		}
		out = append(out, expanded...)
		if len(out) > jqMaxPaths {
			return nil, fmt.Errorf("%s %q: more than %d paths", e.field, e.src, jqMaxPaths)
		}
	}
}

// jqTokens turns one jq path into reference tokens, resolving negative
// indexes and slices ({"start": s, "end": e}) against the object. A path
// that ends in a slice expands to one path per element of the slice.
func jqTokens(root any, path []any) ([][]string, error) {
	tokens := make([]string, 0, len(path))
	node := root
	for i := 0; i < len(path); i++ {
		switch x := path[i].(type) {
		case string:
			tokens = append(tokens, x)
			m, _ := node.(map[string]any)
			node = m[x]
		case map[string]any:
			l, _ := node.([]any)
			lo, hi := sliceBounds(x, len(l))
			for i+1 < len(path) { // a slice of a slice
				y, ok := path[i+1].(map[string]any)
				if !ok {
					break
				}
				a, b := sliceBounds(y, hi-lo)
				lo, hi = lo+a, lo+b
				i++
			}
			if i+1 == len(path) {
				out := make([][]string, 0, hi-lo)
				for j := lo; j < hi; j++ {
					out = append(out, append(append([]string(nil), tokens...), strconv.Itoa(j)))
				}
				return out, nil
			}
			i++
			j, ok := jqIndex(path[i])
			if !ok {
				return nil, fmt.Errorf("unsupported path element %v after a slice", path[i])
			}
			if j < 0 {
				j += hi - lo
			}
			if j < 0 || lo+j >= hi {
				return nil, nil // outside the slice: selects nothing
			}
			tokens = append(tokens, strconv.Itoa(lo+j))
			node = l[lo+j]
		default:
			n, ok := jqIndex(x)
			if !ok {
				return nil, fmt.Errorf("unsupported path element %v", x)
			}
			l, _ := node.([]any)
			if n < 0 {
				n += len(l)
			}
			if n < 0 {
				return nil, nil // before the start: selects nothing
			}
			tokens = append(tokens, strconv.Itoa(n))
			node = nil
			if n < len(l) {
				node = l[n]
			}
		}
	}
	return [][]string{tokens}, nil
}

func jqIndex(v any) (int, bool) {
	switch n := v.(type) {
	case int:
		return n, true
	case float64:
		if math.IsInf(n, 0) || math.IsNaN(n) || math.Abs(n) > 1<<53 {
			return 0, false
		}
		return int(math.Floor(n)), true
	}
	return 0, false
}

// sliceBounds resolves a jq slice against a list of length n.
func sliceBounds(slice map[string]any, n int) (lo, hi int) {
	bound := func(v any, def int) int {
		i, ok := jqIndex(v)
		if !ok {
			return def
		}
		if i < 0 {
			i += n
		}
		return min(max(i, 0), n)
	}
	lo, hi = bound(slice["start"], 0), bound(slice["end"], n)
	return lo, max(lo, hi)
}

// jqValue converts an unstructured value to the types gojq works with
// (int64 and friends become int or float64).
func jqValue(v any) any {
	switch x := v.(type) {
	case map[string]any:
		m := make(map[string]any, len(x))
		for k, e := range x {
			m[k] = jqValue(e)
		}
		return m
	case []any:
		l := make([]any, len(x))
		for i, e := range x {
			l[i] = jqValue(e)
		}
		return l
	case int64:
		if x >= math.MinInt && x <= math.MaxInt {
			return int(x)
		}
		return new(big.Int).SetInt64(x)
	case int32:
		return int(x)
	case float32:
		return float64(x)
	case json.Number:
		if i, err := x.Int64(); err == nil {
			return jqValue(i)
		}
		f, _ := x.Float64()
		return f
	}
	return v
}

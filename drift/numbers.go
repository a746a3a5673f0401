package drift

import "encoding/json"

// JSONNumbers turns the json.Number values of a value decoded with
// UseNumber into int64 (when integral) or float64, the types unstructured
// objects hold, in place, and returns it.
func JSONNumbers(v any) any {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			x[k] = JSONNumbers(e)
		}
	case []any:
		for i, e := range x {
			x[i] = JSONNumbers(e)
		}
	case json.Number:
		if i, err := x.Int64(); err == nil {
			return i
		}
		f, _ := x.Float64()
		return f
	}
	return v
}

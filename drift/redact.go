package drift

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
)

// RedactValue returns "sha256:" followed by the first 12 hex digits of the
// SHA-256 of v's JSON encoding, in place of a Secret's value: equal values
// give equal digests, so a record still shows whether a value changed,
// without showing it. Twelve hex digits identify a change; they are not meant
// to resist guessing of short, low-entropy values.
func RedactValue(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		// Not JSON-encodable: hash its Go formatting, never the value itself.
		b = fmt.Appendf(nil, "%#v", v)
	}
	sum := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(sum[:6])
}

// RedactMap redacts every value of a map (Secret data); other values are
// redacted whole.
func RedactMap(v any) any {
	m, ok := v.(map[string]any)
	if !ok {
		if v == nil {
			return nil
		}
		return RedactValue(v)
	}
	out := make(map[string]any, len(m))
	for k, val := range m {
		out[k] = RedactValue(val)
	}
	return out
}

// RedactObject returns a copy of obj with Secret data and stringData
// values redacted, and the last-applied annotation removed (it holds them
// too). Other kinds are returned as they are.
func RedactObject(obj map[string]any) map[string]any {
	if obj == nil || !isSecret(obj) {
		return obj
	}
	out := make(map[string]any, len(obj))
	for k, v := range obj {
		out[k] = v
	}
	for _, k := range []string{"data", "stringData"} {
		if v, ok := out[k]; ok {
			out[k] = RedactMap(v)
		}
	}
	if md, ok := out["metadata"].(map[string]any); ok {
		if ann, ok := md["annotations"].(map[string]any); ok {
			if _, has := ann["kubectl.kubernetes.io/last-applied-configuration"]; has {
				md2 := make(map[string]any, len(md))
				for k, v := range md {
					md2[k] = v
				}
				ann2 := make(map[string]any, len(ann))
				for k, v := range ann {
					ann2[k] = v
				}
				ann2["kubectl.kubernetes.io/last-applied-configuration"] = RedactValue(ann["kubectl.kubernetes.io/last-applied-configuration"])
				md2["annotations"] = ann2
				out["metadata"] = md2
			}
		}
	}
	return out
}

package drift

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
)

// RedactValue hides a secret value behind a short hash, so two records can
// still tell whether a value changed without showing it.
func RedactValue(v any) string {
	b, _ := json.Marshal(v)
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

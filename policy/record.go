package policy

import (
	"maps"

	"github.com/driftguard/driftguard/drift"
)

// RecordedGuardSpec is a Guard's spec as an audit record keeps it (the
// policyInput of a decision, for replay): without the values a render
// substitutes or merges, which may be secrets and which no decision needs
// in clear. spec.helm.values becomes the digest of the whole value
// (drift.RedactValue, "sha256:…") and each of spec.vars the digest of its
// value, so a replay still tells that they changed; every other field is
// kept. spec is not changed; it is returned as it is when it holds
// neither.
func RecordedGuardSpec(spec map[string]any) map[string]any {
	helm, _ := spec["helm"].(map[string]any)
	_, hasValues := helm["values"] // false when there is no helm
	vars, hasVars := spec["vars"].(map[string]any)
	if !hasVars && !hasValues {
		return spec
	}
	out := maps.Clone(spec)
	if hasValues {
		h := maps.Clone(helm)
		h["values"] = drift.RedactValue(helm["values"])
		out["helm"] = h
	}
	if hasVars {
		d := make(map[string]any, len(vars))
		for k, v := range vars {
			d[k] = drift.RedactValue(v)
		}
		out["vars"] = d
	}
	return out
}

package policy

import (
	"maps"

	"github.com/driftguard/driftguard/redact"
)

// sourceFields are the fields of a Guard's spec that hold a source with a
// url.
var sourceFields = []string{"git", "helmRepository", "oci"}

// withoutCredentials returns in with the URLs a policy sees redacted
// (redact.URL): source.url, and url, git.url, helmRepository.url and
// oci.url of guardSpec. A policy has no use for credentials, and what it
// returns ends up in denial messages and audit records. The caller's maps
// are not changed.
func withoutCredentials(in Input) Input {
	in.Source.URL = redact.URL(in.Source.URL)
	if in.GuardSpec == nil {
		return in
	}
	var spec map[string]any // a copy, once something changes
	set := func(k string, v any) {
		if spec == nil {
			spec = maps.Clone(in.GuardSpec)
		}
		spec[k] = v
	}
	if u, ok := in.GuardSpec["url"].(string); ok {
		if r := redact.URL(u); r != u {
			set("url", r)
		}
	}
	for _, field := range sourceFields {
		src, ok := in.GuardSpec[field].(map[string]any)
		if !ok {
			continue
		}
		if u, ok := src["url"].(string); ok {
			if r := redact.URL(u); r != u {
				src = maps.Clone(src)
				src["url"] = r
				set(field, src)
			}
		}
	}
	if spec != nil {
		in.GuardSpec = spec
	}
	return in
}

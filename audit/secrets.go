package audit

import (
	"bytes"
	"encoding/json"
	"maps"
	"regexp"

	"github.com/driftguard/driftguard/drift"
	"github.com/driftguard/driftguard/redact"
)

// withoutSecrets takes the secret values the process knows of
// (redact.Secrets: decrypted SOPS values, variables from Secrets, data of
// Secrets of the revisions in force) out of every text of r, before any
// sink or the process log sees it, whoever built the record; and digests
// the Helm values and variables of a Guard spec in the policy input.
// r.Groups, r.Fields and r.Source must be r's own copies; values inside
// fields are copied when they change, never changed in place.
func withoutSecrets(r *Record) {
	r.PolicyInput = withoutGuardValues(r.PolicyInput)
	if !redact.Secrets.Active() {
		return
	}
	s := redact.Secrets.String
	r.Guard, r.User, r.Manager, r.Operation = s(r.Guard), s(r.User), s(r.Manager), s(r.Operation)
	for i, g := range r.Groups {
		r.Groups[i] = s(g)
	}
	r.Object.Group, r.Object.Version, r.Object.Kind = s(r.Object.Group), s(r.Object.Version), s(r.Object.Kind)
	r.Object.Namespace, r.Object.Name = s(r.Object.Namespace), s(r.Object.Name)
	for i := range r.Fields {
		f := &r.Fields[i]
		f.Path, f.Change = s(f.Path), s(f.Change)
		f.Desired, f.Live, f.Old = scrubValue(f.Desired), scrubValue(f.Live), scrubValue(f.Old)
	}
	r.Action, r.Reason, r.Rule, r.PolicyAction, r.PolicyRevision = s(r.Action), s(r.Reason), s(r.Rule), s(r.PolicyAction), s(r.PolicyRevision)
	if r.Source != nil {
		r.Source.URL, r.Source.Revision, r.Source.Path = s(r.Source.URL), s(r.Source.Revision), s(r.Source.Path)
	}
	r.RequestUID, r.Error = s(r.RequestUID), s(r.Error)
	if in := redact.Secrets.Bytes(r.PolicyInput); len(in) != len(r.PolicyInput) || !bytes.Equal(in, r.PolicyInput) {
		if !json.Valid(in) {
			in = json.RawMessage(`{"redacted":true}`) // a value matched across JSON syntax: keep nothing
		}
		r.PolicyInput = in
	}
}

// scrubValue returns v with registered secret values replaced in every
// string (map keys included); v itself when nothing changes.
func scrubValue(v any) any {
	out, _ := scrub(v)
	return out
}

// scrub is scrubValue that also reports whether anything changed; a map
// or list that changes is copied, never changed in place.
func scrub(v any) (any, bool) {
	switch v := v.(type) {
	case string:
		s := redact.Secrets.String(v)
		return s, s != v
	case map[string]any:
		var out map[string]any
		for k, e := range v {
			k2 := redact.Secrets.String(k)
			e2, ch := scrub(e)
			if k2 == k && !ch {
				continue
			}
			if out == nil {
				out = maps.Clone(v)
			}
			delete(out, k)
			out[k2] = e2
		}
		if out == nil {
			return v, false
		}
		return out, true
	case []any:
		var out []any
		for i, e := range v {
			if e2, ch := scrub(e); ch {
				if out == nil {
					out = append([]any(nil), v...)
				}
				out[i] = e2
			}
		}
		if out == nil {
			return v, false
		}
		return out, true
	case []string:
		var out []string
		for i, e := range v {
			if e2 := redact.Secrets.String(e); e2 != e {
				if out == nil {
					out = append([]string(nil), v...)
				}
				out[i] = e2
			}
		}
		if out == nil {
			return v, false
		}
		return out, true
	}
	return v, false
}

// guardSpecKey is how the Guard spec of a policy input starts in JSON.
var guardSpecKey = []byte(`"guardSpec":`)

// withoutGuardValues digests spec.helm.values and spec.vars of the Guard
// spec in a policy input (see policy.RecordedGuardSpec, which the webhook
// uses before it records), for a record built by anyone else.
func withoutGuardValues(raw json.RawMessage) json.RawMessage {
	if !bytes.Contains(raw, guardSpecKey) || (allDigested(raw, valuesKey, digestedValues) && allDigested(raw, varsKey, digestedVars)) {
		return raw // the common case, decided without decoding
	}
	var in map[string]json.RawMessage
	if json.Unmarshal(raw, &in) != nil {
		return raw
	}
	var spec map[string]any
	if json.Unmarshal(in["guardSpec"], &spec) != nil {
		return raw
	}
	changedSpec := false
	if helm, ok := spec["helm"].(map[string]any); ok {
		if v, ok := helm["values"]; ok {
			if _, digested := v.(string); !digested {
				helm["values"], changedSpec = drift.RedactValue(v), true
			}
		}
	}
	if vars, ok := spec["vars"].(map[string]any); ok {
		for k, v := range vars {
			if s, ok := v.(string); !ok || !isDigest(s) {
				vars[k], changedSpec = drift.RedactValue(v), true
			}
		}
	}
	if !changedSpec {
		return raw
	}
	b, err := json.Marshal(spec)
	if err != nil {
		return raw
	}
	in["guardSpec"] = b
	out, err := json.Marshal(in)
	if err != nil {
		return raw
	}
	return out
}

var (
	valuesKey      = []byte(`"values":`)
	varsKey        = []byte(`"vars":`)
	digestedValues = regexp.MustCompile(`^"values":"sha256:[0-9a-f]{12}"`)
	digestedVars   = regexp.MustCompile(`^"vars":\{(?:"[^"\\]*":"sha256:[0-9a-f]{12}",?)*\}`)
)

// allDigested reports whether every occurrence of key in raw is followed by
// what digested matches.
func allDigested(raw, key []byte, digested *regexp.Regexp) bool {
	for i := 0; ; {
		j := bytes.Index(raw[i:], key)
		if j < 0 {
			return true
		}
		if !digested.Match(raw[i+j:]) {
			return false
		}
		i += j + len(key)
	}
}

func isDigest(s string) bool {
	return len(s) == len("sha256:")+12 && s[:7] == "sha256:"
}

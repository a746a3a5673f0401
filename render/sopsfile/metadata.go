package sopsfile

import (
	"errors"
	"fmt"
	"strconv"
	"time"
)

// metadata is what decryption needs of a file's sops key.
type metadata struct {
	ageKeys []ageKey // the age recipients, in file order
	// otherKeyTypes names the other kinds of master keys (pgp, kms, ...).
	otherKeyTypes []string
	// lastModified is the additional data of the MAC: lastmodified parsed
	// and formatted again as RFC 3339, as sops does.
	lastModified     string
	mac              string
	rules            rules
	macOnlyEncrypted bool
	version          string
}

// ageKey is an age recipient and the data key encrypted for it, an armored
// age file.
type ageKey struct {
	recipient string
	enc       string
}

// otherKeyTypes are the master key kinds sops knows besides age, in the
// order sops lists them.
var otherKeyTypes = []string{"kms", "gcp_kms", "hckms", "azure_kv", "hc_vault", "pgp"}

// parseMetadata reads the value of the sops key, decoded into maps, lists
// and scalars. Scalars are taken loosely typed, as sops does.
func parseMetadata(v any) (metadata, error) {
	m, ok := v.(map[string]any)
	if !ok {
		return metadata{}, errors.New("the sops key is not a mapping")
	}
	var md metadata
	groups := []map[string]any{m}
	if !hasKeys(m) {
		kg, _ := m["key_groups"].([]any)
		if len(kg) == 0 {
			return metadata{}, errors.New("sops metadata has no keys")
		}
		if len(kg) > 1 {
			return metadata{}, unsupportedError(fmt.Sprintf("the data key is split between %d key groups (Shamir secret sharing), which driftguard does not decrypt", len(kg)))
		}
		g, ok := kg[0].(map[string]any)
		if !ok {
			return metadata{}, errors.New("sops metadata: key_groups holds something else than a key group")
		}
		groups = []map[string]any{g}
	}
	for _, g := range groups {
		for _, t := range otherKeyTypes {
			if l, _ := g[t].([]any); len(l) > 0 {
				md.otherKeyTypes = append(md.otherKeyTypes, t)
			}
		}
		ages, _ := g["age"].([]any)
		for i, a := range ages {
			am, ok := a.(map[string]any)
			if !ok {
				return metadata{}, fmt.Errorf("sops metadata: age key %d is not a mapping", i+1)
			}
			md.ageKeys = append(md.ageKeys, ageKey{recipient: str(am["recipient"]), enc: str(am["enc"])})
		}
	}

	lm := str(m["lastmodified"])
	t, err := time.Parse(time.RFC3339, lm)
	if err != nil {
		return metadata{}, fmt.Errorf("sops metadata: lastmodified %q is not an RFC 3339 time", lm)
	}
	md.lastModified = t.Format(time.RFC3339)
	md.mac = str(m["mac"])
	md.version = str(m["version"])
	md.macOnlyEncrypted = boolean(m["mac_only_encrypted"])

	var set []string
	r := &md.rules
	for _, f := range []struct {
		name string
		into func(string)
	}{
		{"unencrypted_suffix", func(s string) { r.unencryptedSuffix = s }},
		{"encrypted_suffix", func(s string) { r.encryptedSuffix = s }},
		{"unencrypted_regex", func(s string) { r.unencryptedRegex = newMatcher(s) }},
		{"encrypted_regex", func(s string) { r.encryptedRegex = newMatcher(s) }},
		{"unencrypted_comment_regex", func(s string) { r.unencryptedComment = newMatcher(s) }},
		{"encrypted_comment_regex", func(s string) { r.encryptedComment = newMatcher(s) }},
	} {
		if s := str(m[f.name]); s != "" {
			f.into(s)
			set = append(set, f.name)
		}
	}
	if len(set) > 1 {
		return metadata{}, fmt.Errorf("sops metadata sets %s; at most one of them may be set", joinAnd(set))
	}
	if len(set) == 0 {
		r.unencryptedSuffix = "_unencrypted"
	}
	return md, nil
}

// unsupportedError says a valid SOPS file uses something this package
// does not implement.
type unsupportedError string

func (e unsupportedError) Error() string { return "SOPS file not supported: " + string(e) }

// hasKeys reports whether a mapping lists master keys itself rather than
// in key_groups.
func hasKeys(m map[string]any) bool {
	for _, t := range append([]string{"age"}, otherKeyTypes...) {
		if l, _ := m[t].([]any); len(l) > 0 {
			return true
		}
	}
	return false
}

// str reads a scalar as a string.
func str(v any) string {
	switch v := v.(type) {
	case nil:
		return ""
	case string:
		return v
	case bool:
		if v {
			return "1"
		}
		return "0"
	case int:
		return strconv.Itoa(v)
	case float64:
		return strconv.FormatFloat(v, 'f', -1, 64)
	}
	return fmt.Sprint(v)
}

// boolean reads a scalar as a bool.
func boolean(v any) bool {
	switch v := v.(type) {
	case bool:
		return v
	case string:
		b, _ := strconv.ParseBool(v)
		return b
	case int:
		return v != 0
	case float64:
		return v != 0
	}
	return false
}

func joinAnd(s []string) string {
	switch len(s) {
	case 0:
		return ""
	case 1:
		return s[0]
	}
	out := s[0]
	for _, x := range s[1 : len(s)-1] {
		out += ", " + x
	}
	return out + " and " + s[len(s)-1]
}

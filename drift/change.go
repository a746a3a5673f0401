package drift

import (
	"strings"
)

// Change is one field whose live value differs from Git (Compare), or that
// one write changes (Edits).
type Change struct {
	// Path is a JSON pointer (RFC 6901) into the desired object.
	Path string `json:"path"`
	// Desired is the value Git sets; redacted for Secret data.
	Desired any `json:"desired"`
	// Live is the value in the cluster, nil when the field is missing; redacted for Secret data.
	Live any `json:"live"`
	// Missing is true when the live object lacks the field altogether.
	Missing bool `json:"missing,omitempty"`
	// Old is the value before the write, for the changes Edits returns
	// (nil when the write adds the field); redacted for Secret data.
	Old any `json:"old,omitempty"`
	// Added is true when the field is new: Git does not set it (Compare),
	// or the object before the write lacked it (Edits).
	Added bool `json:"added,omitempty"`
}

// escapeToken escapes one JSON pointer reference token.
func escapeToken(s string) string {
	if !strings.ContainsAny(s, "~/") {
		return s
	}
	s = strings.ReplaceAll(s, "~", "~0")
	return strings.ReplaceAll(s, "/", "~1")
}

// pointer joins reference tokens into a JSON pointer.
func pointer(tokens []string) string {
	var b strings.Builder
	for _, t := range tokens {
		b.WriteByte('/')
		b.WriteString(escapeToken(t))
	}
	return b.String()
}

// Paths returns the JSON pointers of the changes, for messages.
func Paths(changes []Change) []string {
	out := make([]string, len(changes))
	for i, c := range changes {
		out[i] = c.Path
	}
	return out
}

// AddedPaths returns the paths of the changes that add a field.
func AddedPaths(changes []Change) []string {
	out := []string{}
	for _, c := range changes {
		if c.Added {
			out = append(out, c.Path)
		}
	}
	return out
}

// RemovedPaths returns the paths of the changes that remove a field.
func RemovedPaths(changes []Change) []string {
	out := []string{}
	for _, c := range changes {
		if c.Missing {
			out = append(out, c.Path)
		}
	}
	return out
}

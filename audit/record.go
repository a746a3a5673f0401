// Package audit defines driftguard's audit record and delivers records to
// sinks: JSON lines on a writer (stdout), a rotating file, and Kubernetes
// Events. Every drift, revert, apply, prune and admission decision becomes one
// Record. The package decides nothing; it only records what others decided.
package audit

import (
	"bytes"
	"encoding/json"
	"fmt"
	"time"

	"github.com/driftguard/driftguard/drift"
	"github.com/driftguard/driftguard/render"
)

// Type says what happened.
type Type string

// The record types.
const (
	// Decision is an admission decision on a change to a managed object.
	Decision Type = "decision"
	// Drift is a difference between the live object and Git.
	Drift Type = "drift"
	// Revert is a live object put back to its desired state (self-heal).
	Revert Type = "revert"
	// Apply is a server-side apply of a desired object.
	Apply Type = "apply"
	// Prune is the deletion of an object that left Git.
	Prune Type = "prune"
	// Error is a failure of the guard (fetch, render, apply, policy).
	Error Type = "error"
	// Recreate is an object deleted by hand and created again from Git.
	Recreate Type = "recreate"
	// Health records a change of a Guard's health state (Action is the new
	// state, Reason why).
	Health Type = "health"
)

// Object names a Kubernetes object.
type Object struct {
	Group     string `json:"group,omitempty"`
	Version   string `json:"version"`
	Kind      string `json:"kind"`
	Namespace string `json:"namespace,omitempty"`
	Name      string `json:"name"`
}

// APIVersion returns "group/version", or "version" for the core group.
func (o Object) APIVersion() string {
	if o.Group == "" {
		return o.Version
	}
	return o.Group + "/" + o.Version
}

// String returns "Kind namespace/name" (or "Kind name" when cluster-scoped).
func (o Object) String() string {
	if o.Namespace == "" {
		return o.Kind + " " + o.Name
	}
	return o.Kind + " " + o.Namespace + "/" + o.Name
}

// Field is one differing field. Desired and Live are omitted when the field is
// absent on that side. Values must already be redacted by the caller (see
// RedactValue).
type Field struct {
	Path    string `json:"path"`
	Desired any    `json:"desired,omitempty"`
	Live    any    `json:"live,omitempty"`
	// Old is the value before an admission request's change.
	Old any `json:"old,omitempty"`
	// Change is "added" (a field Git does not set, or the object lacked)
	// or "removed" (a field Git sets, or the object had); empty for a
	// changed value.
	Change string `json:"change,omitempty"`
}

// Source is where the desired object comes from in Git.
type Source struct {
	URL      string `json:"url"`
	Revision string `json:"revision"`
	Path     string `json:"path,omitempty"`
	Line     int    `json:"line,omitempty"`
}

// Record is one audit record. docs/audit.md describes every field.
type Record struct {
	Time      time.Time `json:"time"`
	Type      Type      `json:"type"`
	Guard     string    `json:"guard,omitempty"`
	User      string    `json:"user,omitempty"`
	Groups    []string  `json:"groups,omitempty"`
	Manager   string    `json:"manager,omitempty"`
	Operation string    `json:"operation,omitempty"`
	Object    Object    `json:"object"`
	Fields    []Field   `json:"fields,omitempty"`
	Action    string    `json:"action,omitempty"`
	Reason    string    `json:"reason,omitempty"`
	Rule      string    `json:"rule,omitempty"`
	// PolicyAction is the policy's own action when enforcement (the Guard's
	// mode or the object's annotation) turned it into Action.
	PolicyAction   string  `json:"policyAction,omitempty"`
	PolicyRevision string  `json:"policyRevision,omitempty"`
	Source         *Source `json:"source,omitempty"`
	RequestUID     string  `json:"requestUID,omitempty"`
	DryRun         bool    `json:"dryRun,omitempty"`
	Orphan         bool    `json:"orphan,omitempty"`
	// PolicyInput is what the policy decided on, without the object bodies
	// (object, oldObject, desired), for `driftguard policy replay`.
	PolicyInput json.RawMessage `json:"policyInput,omitempty"`
	Error       string          `json:"error,omitempty"`
	DurationMS  float64         `json:"durationMs,omitempty"`
}

// appendJSONLine appends the JSON encoding of r and a newline to buf. The time
// is written in UTC; HTML characters are not escaped so messages stay legible.
func appendJSONLine(buf *bytes.Buffer, r Record) error {
	r.Time = r.Time.UTC()
	enc := json.NewEncoder(buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(r); err != nil {
		return fmt.Errorf("encode %s record for %s: %w", r.Type, r.Object, err)
	}
	return nil
}

// marshalLine returns r as one JSON line, newline included.
func marshalLine(r Record) ([]byte, error) {
	var buf bytes.Buffer
	if err := appendJSONLine(&buf, r); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// FieldsOf converts the comparison's changes (already redacted) into record fields.
func FieldsOf(cs []drift.Change) []Field {
	out := make([]Field, len(cs))
	for i, c := range cs {
		out[i] = Field{Path: c.Path, Desired: c.Desired, Live: c.Live, Old: c.Old}
		switch {
		case c.Added:
			out[i].Change = "added"
		case c.Missing:
			out[i].Change = "removed"
		}
	}
	return out
}

// ObjectOf names a desired object in a record.
func ObjectOf(o *render.Object) Object {
	gvk := o.GVK()
	return Object{Group: gvk.Group, Version: gvk.Version, Kind: gvk.Kind, Namespace: o.Key.Namespace, Name: o.Key.Name}
}

// SourceOf is where in Git an object comes from, for a record.
func SourceOf(s render.Source) *Source {
	return &Source{URL: s.URL, Revision: s.Revision, Path: s.Path, Line: s.Line}
}

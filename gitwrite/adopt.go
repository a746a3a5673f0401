package gitwrite

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/driftguard/driftguard/drift"
	"github.com/driftguard/driftguard/gitwrite/yamledit"
)

// AdoptOps turns the drift of an object into the edits that write its live
// values into Git: a field the live object lacks is deleted from the file,
// any other takes the live value. The pointers are drift's, which address a
// list element by its index in Git's list (a named element was matched with
// the live element of the same name), as yamledit does.
func AdoptOps(changes []drift.Change) []yamledit.Op {
	ops := make([]yamledit.Op, 0, len(changes))
	for _, c := range changes {
		if c.Missing {
			ops = append(ops, yamledit.Op{Pointer: c.Path, Delete: true})
			continue
		}
		ops = append(ops, yamledit.Op{Pointer: c.Path, Value: c.Live})
	}
	return ops
}

// Adoption describes the live state of an object written into Git, for the
// commit message.
type Adoption struct {
	// Object names it: "Deployment shop/web".
	Object string
	// File and Line are where it is in the repository.
	File string
	Line int
	// Changes are the adopted fields.
	Changes []drift.Change
	// Guard is the Guard that applies the file.
	Guard string
	// Reason is the object's break-glass annotation, if any.
	Reason string
	// ChangedBy and ChangedAt come from the changed-by stamp, if any.
	ChangedBy string
	ChangedAt time.Time
	// AdoptedBy is who ran the adoption.
	AdoptedBy string
	// Summary replaces the generated first line.
	Summary string
}

// maxValueText bounds a value quoted in the message.
const maxValueText = 100

// Message is the commit message: a summary line, the adopted fields with
// their Git and live values, the break-glass reason and who changed and
// adopted it.
func (a Adoption) Message() string {
	var b strings.Builder
	summary := strings.TrimSpace(a.Summary)
	if summary == "" {
		summary = fmt.Sprintf("adopt the live state of %s", a.Object)
		if a.Reason != "" {
			summary += ": " + firstLine(a.Reason)
		}
	}
	b.WriteString(summary)
	b.WriteString("\n\n")
	fields := "fields"
	if len(a.Changes) == 1 {
		fields = "field"
	}
	fmt.Fprintf(&b, "Writes the live value of %d %s of %s into %s (line %d), as the cluster holds them:\n\n",
		len(a.Changes), fields, a.Object, a.File, a.Line)
	for _, c := range a.Changes {
		live := "(deleted: the live object does not set it)"
		if !c.Missing {
			live = valueText(c.Live)
		}
		fmt.Fprintf(&b, "  %s: %s → %s\n", c.Path, valueText(c.Desired), live)
	}
	b.WriteString("\n")
	changedBy := a.ChangedBy
	if changedBy != "" && !a.ChangedAt.IsZero() {
		changedBy += " at " + a.ChangedAt.UTC().Format(time.RFC3339)
	}
	writeTrailers(&b, "Break-glass-reason", oneLine(a.Reason), "Changed-by", changedBy, "Adopted-by", a.AdoptedBy, "Guard", a.Guard)
	return b.String()
}

// writeTrailers writes the commit message trailers "Key: value", from
// pairs of key and value, of the values that are not empty.
func writeTrailers(b *strings.Builder, pairs ...string) {
	for i := 0; i+1 < len(pairs); i += 2 {
		if pairs[i+1] != "" {
			fmt.Fprintf(b, "%s: %s\n", pairs[i], pairs[i+1])
		}
	}
}

func valueText(v any) string {
	raw, err := json.Marshal(v)
	s := string(raw)
	if err != nil {
		s = fmt.Sprint(v)
	}
	if len(s) > maxValueText {
		s = s[:maxValueText] + "…"
	}
	return s
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(strings.TrimSpace(s), "\n")
	return s
}

func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}

package webhook

import (
	"encoding/json"
	"fmt"
	"strings"

	admissionv1 "k8s.io/api/admission/v1"

	"github.com/driftguard/driftguard/drift"
	"github.com/driftguard/driftguard/policy"
	"github.com/driftguard/driftguard/redact"
	"github.com/driftguard/driftguard/render"
	"github.com/driftguard/driftguard/source"
)

// maxShownChanges bounds how many fields a message lists.
const maxShownChanges = 5

// denialMessage tells the person what owns the object and where to change it.
func denialMessage(key render.ObjectKey, want *render.Object, req *admissionv1.AdmissionRequest, changes []drift.Change, d policy.Decision) string {
	var b strings.Builder
	fmt.Fprintf(&b, "driftguard: %s is managed by Git (%s). ", key.Display(), sourceName(want.Source))
	if req.Operation == admissionv1.Delete {
		b.WriteString("Deleting it")
	} else {
		b.WriteString(describeChanges(changes))
	}
	fmt.Fprintf(&b, " denied by policy %q", d.Rule)
	if d.Reason != "" {
		fmt.Fprintf(&b, ": %s", d.Reason)
	}
	fmt.Fprintf(&b, ". Change it in Git, in %s.", want.Source.Path)
	return b.String()
}

// orphanMessage tells the person that the namespace belongs to Git and the
// new object does not.
func orphanMessage(key render.ObjectKey, namespace string, ns *render.Object, d policy.Decision) string {
	msg := fmt.Sprintf("driftguard: namespace %s is managed by Git (%s) and %s is not in Git", namespace, sourceName(ns.Source), key.Display())
	if d.Rule != "" {
		msg += fmt.Sprintf("; policy %q", d.Rule)
	}
	if d.Reason != "" {
		msg += ": " + d.Reason
	}
	return msg + ". Add it to Git, next to " + ns.Source.Path + "."
}

func warningMessage(key render.ObjectKey, want *render.Object, changes []drift.Change, d policy.Decision) string {
	msg := fmt.Sprintf("driftguard: %s is managed by Git (%s); %s differs from Git", key.Display(), sourceName(want.Source), describeChanges(changes))
	if d.Reason != "" {
		msg += ": " + d.Reason
	}
	return msg
}

func sourceName(s render.Source) string {
	return fmt.Sprintf("%s %s:%d@%s", redact.URL(s.URL), s.Path, s.Line, source.ShortRevision(s.Revision))
}

func describeChanges(changes []drift.Change) string {
	parts := make([]string, 0, maxShownChanges+1)
	for i, c := range changes {
		if i == maxShownChanges {
			parts = append(parts, fmt.Sprintf("and %d more fields", len(changes)-maxShownChanges))
			break
		}
		parts = append(parts, describeChange(c))
	}
	return strings.Join(parts, ", ")
}

// describeChange shows one change: for a write, its old and new value and
// Git's beside them; for drift, Git's value and the cluster's.
func describeChange(c drift.Change) string {
	from := c.Desired
	if c.Old != nil || c.Added {
		from = c.Old
	}
	var s string
	switch {
	case c.Added:
		s = fmt.Sprintf("%s: (added) %s", c.Path, show(c.Live))
	case c.Missing:
		s = fmt.Sprintf("%s: %s → (removed)", c.Path, show(from))
	default:
		s = fmt.Sprintf("%s: %s → %s", c.Path, show(from), show(c.Live))
	}
	if (c.Old != nil || c.Added) && c.Desired != nil {
		s += fmt.Sprintf(" (Git: %s)", show(c.Desired))
	}
	return s
}

// show renders a value compactly for a message.
func show(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	s := string(b)
	if len(s) > 60 {
		s = s[:57] + "..."
	}
	return s
}

package reconcile

import (
	"context"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/driftguard/driftguard/apply"
	"github.com/driftguard/driftguard/audit"
)

// Kept is the audit action of a labelled object prune did not delete.
const Kept apply.Action = "kept"

// maxKeptNamed is how many kept objects the Guard's NotPruned Event names.
const maxKeptNamed = 5

// reportKept records each object that carries the Guard's label and left
// Git (or was never in it) but that the guard did not apply: an audit
// record (type prune, action kept, the reason) each, and one Warning Event
// NotPruned on the Guard naming them.
func (r *GuardReconciler) reportKept(ctx context.Context, a *attempt, kept []Pruned) {
	if len(kept) == 0 {
		return
	}
	g := a.g
	names := make([]string, 0, min(len(kept), maxKeptNamed+1))
	for i, p := range kept {
		r.record(ctx, audit.Record{Type: audit.Prune, Guard: g.Name, User: apply.FieldManager, Operation: "PRUNE", Action: string(Kept),
			Object: prunedObject(p), Reason: p.Reason, Source: &audit.Source{URL: SourceURL(g), Revision: a.rev}})
		if i < maxKeptNamed {
			names = append(names, p.Key.Display())
		}
	}
	if len(kept) > maxKeptNamed {
		names = append(names, fmt.Sprintf("and %d more", len(kept)-maxKeptNamed))
	}
	a.log.Info("objects carry the guard's label but are not its own: not pruned", "count", len(kept), "objects", names)
	r.event(g, corev1.EventTypeWarning, "NotPruned", fmt.Sprintf(
		"kept %d objects that carry the label %s=%s and are not in Git at %s, because this guard did not apply them (not in its inventory): %s; remove the label, or delete them by hand",
		len(kept), apply.GuardLabel, g.Name, short(a.rev), strings.Join(names, ", ")))
}

// prunedObject names a pruned or kept object in an audit record.
func prunedObject(p Pruned) audit.Object {
	return audit.Object{Group: p.GVK.Group, Version: p.GVK.Version, Kind: p.GVK.Kind, Namespace: p.Key.Namespace, Name: p.Key.Name}
}

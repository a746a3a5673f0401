package reconcile

import (
	"context"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/driftguard/driftguard/api/v1alpha1"
	"github.com/driftguard/driftguard/render"
	"github.com/driftguard/driftguard/source"
)

// syncBlocked says why a new revision may not be applied now ("" when it
// may): manual sync mode without a new request, or a closed sync window
// that a manual request may not pass.
func syncBlocked(g *v1alpha1.Guard, gate Gate, manual bool, rev string) (reason, msg string) {
	if rev == g.Status.LastAppliedRevision {
		return "", ""
	}
	if g.Spec.Sync == v1alpha1.SyncManual && !manual {
		return v1alpha1.ReasonManualSyncRequired, fmt.Sprintf("revision %s waits for a manual sync (driftguard sync %s); %s stays in force", short(rev), g.Name, orNone(short(g.Status.LastAppliedRevision)))
	}
	if !gate.Open && (!manual || !gate.ManualOK) {
		return v1alpha1.ReasonSyncWindowClosed, fmt.Sprintf("revision %s waits: %s; %s stays in force", short(rev), gate.Message, orNone(short(g.Status.LastAppliedRevision)))
	}
	return "", ""
}

// appliedSnapshot returns the snapshot of the revision in force, while a
// newer one waits: the one published already, or fetched by its SHA (after
// a restart).
func (r *GuardReconciler) appliedSnapshot(ctx context.Context, g *v1alpha1.Guard, req source.Request) (string, *render.Snapshot, error) {
	applied := g.Status.LastAppliedRevision
	if snap, ok := r.Store.Snapshot(g.Name); ok && snap.Revision == applied {
		return applied, snap, nil
	}
	pinned, ok := PinRevision(req, applied)
	if !ok {
		return "", nil, fmt.Errorf("a %s source cannot fetch an earlier revision (%s) again", req.Kind, source.ShortRevision(applied))
	}
	return r.Fetcher.Fetch(ctx, pinned)
}

// untilGate is when to look again at a Guard whose sync waits for a window:
// the window's next change, at most the interval.
func (r *GuardReconciler) untilGate(g *v1alpha1.Guard, gate Gate) time.Duration {
	next := jitter(r.interval(g))
	if !gate.Next.IsZero() {
		next = min(next, time.Until(gate.Next)+time.Second)
	}
	return next
}

// chooseRevision decides which revision to apply: the newest only when the
// sync mode and the sync windows let it through; otherwise the applied one
// stays in force. A revision that renders nothing would prune everything.
func (r *GuardReconciler) chooseRevision(ctx context.Context, a *attempt) stop {
	g := a.g
	request := g.Annotations[v1alpha1.SyncRequestedAnnotation]
	a.manual = request != "" && request != g.Status.LastHandledSyncRequest
	if a.manual {
		// Looked at once: a request a window refuses is not kept for later.
		g.Status.LastHandledSyncRequest = request
	}
	if reason, msg := syncBlocked(g, a.gate, a.manual, a.rev); reason != "" {
		g.Status.PendingRevision = a.rev
		meta.SetStatusCondition(&g.Status.Conditions, metav1.Condition{Type: v1alpha1.ConditionInSync, Status: metav1.ConditionFalse, Reason: reason, Message: msg})
		if g.Status.LastAppliedRevision == "" {
			r.notReady(g, reason, msg)
			return stopAfter(r.untilGate(g, a.gate))
		}
		rev, snap, err := r.appliedSnapshot(ctx, g, a.req)
		if err != nil {
			return r.failed(ctx, g, v1alpha1.ReasonFetchFailed, fmt.Sprintf("fetch applied revision %s: %v", short(g.Status.LastAppliedRevision), err))
		}
		a.rev, a.snap = rev, snap
	} else {
		g.Status.PendingRevision = ""
		meta.SetStatusCondition(&g.Status.Conditions, metav1.Condition{Type: v1alpha1.ConditionInSync, Status: metav1.ConditionTrue, Reason: v1alpha1.ReasonSynced, Message: "revision " + short(a.rev) + " is the newest"})
	}
	if len(a.snap.Objects) == 0 && !g.Spec.AllowEmpty && (len(g.Status.Inventory) > 0 || g.Status.ManagedObjects > 0) {
		r.stalled(g, v1alpha1.ReasonEmptyRevision, fmt.Sprintf("revision %s renders no objects; %s stays in force and nothing is pruned (set spec.allowEmpty to prune everything)", short(a.rev), orNone(short(g.Status.LastAppliedRevision))))
		return stopAfter(jitter(r.interval(g)))
	}
	return nil
}

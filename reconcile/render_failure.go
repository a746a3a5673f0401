package reconcile

import (
	"errors"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/driftguard/driftguard/api/v1alpha1"
	"github.com/driftguard/driftguard/source"
)

// maxRenderBackoff bounds the wait before a revision that failed to
// render is tried again by a guard that did not see it fail.
const maxRenderBackoff = time.Hour

// maxRenderFailureMessage bounds the error kept in the status.
const maxRenderFailureMessage = 4096

// renderBackoff is the wait after the failures-th failure of a revision:
// the Guard's interval, doubled with each failure after the first, at
// most maxRenderBackoff.
func renderBackoff(interval time.Duration, failures int32) time.Duration {
	d := max(interval, time.Second)
	for i := int32(1); i < failures && d < maxRenderBackoff; i++ {
		d *= 2
	}
	return min(d, maxRenderBackoff)
}

// failedRevision is what the Guard's status says of a revision that
// failed to render, for the fetch: nil when the record no longer holds (the
// spec changed, a sync is requested, its backoff has passed). The guard
// that rendered it keeps its own outcome (the fetcher's render cache); a
// new leader or a restarted process gets the recorded error instead of
// rendering the revision again.
func failedRevision(g *v1alpha1.Guard, interval time.Duration, now time.Time) *source.FailedRevision {
	f := g.Status.RenderFailure
	if f == nil || f.ObservedGeneration != g.Generation {
		return nil
	}
	if req := g.Annotations[v1alpha1.SyncRequestedAnnotation]; req != "" && req != g.Status.LastHandledSyncRequest {
		return nil
	}
	if reconcileWithSource(g) {
		return nil
	}
	until := f.LastFailure.Add(renderBackoff(interval, f.Failures))
	if !now.Before(until) {
		return nil
	}
	return &source.FailedRevision{Revision: f.Revision, Message: f.Message, Until: until}
}

// recordRenderFailure keeps the render error of rev in the Guard's status.
// The same failure seen again within its backoff (from the fetcher's cache,
// or the record itself) changes nothing, so that a failing revision costs
// no status write per reconcile; seen after it, it counts once more and
// the backoff doubles.
func recordRenderFailure(g *v1alpha1.Guard, rev string, err error, interval time.Duration, now time.Time) {
	if errors.Is(err, source.ErrRecordedFailure) {
		return
	}
	failures := int32(1)
	if f := g.Status.RenderFailure; f != nil && f.Revision == rev && f.ObservedGeneration == g.Generation {
		if now.Before(f.LastFailure.Add(renderBackoff(interval, f.Failures))) {
			return
		}
		failures = f.Failures + 1
	}
	msg := err.Error()
	if len(msg) > maxRenderFailureMessage {
		msg = strings.ToValidUTF8(msg[:maxRenderFailureMessage], "") + "…"
	}
	g.Status.RenderFailure = &v1alpha1.RenderFailure{Revision: rev, ObservedGeneration: g.Generation, Message: msg,
		Failures: failures, LastFailure: metav1.NewTime(now)}
}

// reconcileWithSource reports whether a reconcile request not handled yet
// asks for the source afresh (driftguard reconcile --with-source): both
// annotations carry the same request.
func reconcileWithSource(g *v1alpha1.Guard) bool {
	req := g.Annotations[v1alpha1.ReconcileRequestedAnnotation]
	return req != "" && req != g.Status.LastHandledReconcileAt && g.Annotations[v1alpha1.ReconcileSourceAnnotation] == req
}

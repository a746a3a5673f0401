package reconcile

import (
	"context"
	"fmt"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/driftguard/driftguard/api/v1alpha1"
	"github.com/driftguard/driftguard/health"
	"github.com/driftguard/driftguard/render"
)

// waitHealthy sums up health and, with spec.wait, keeps the Guard
// Progressing until its objects are healthy, then HealthCheckFailed after
// spec.timeout.
func (r *GuardReconciler) waitHealthy(ctx context.Context, a *attempt) stop {
	g, rev := a.g, a.rev
	sum := r.summarizeHealth(ctx, g, a.snap)
	if !g.Spec.Wait || sum.State == health.Healthy {
		return nil
	}
	msg := fmt.Sprintf("revision %s applied; waiting for %d objects to become healthy: %s", short(rev), sum.Count, strings.Join(sum.Unhealthy, "; "))
	if time.Since(r.waitStart(g.Name, rev)) < r.timeout(g) {
		g.Status.LastAppliedRevision = rev
		meta.SetStatusCondition(&g.Status.Conditions, metav1.Condition{Type: v1alpha1.ConditionReconciling, Status: metav1.ConditionTrue, Reason: v1alpha1.ReasonProgressing, Message: msg})
		meta.SetStatusCondition(&g.Status.Conditions, metav1.Condition{Type: v1alpha1.ConditionReady, Status: metav1.ConditionFalse, Reason: v1alpha1.ReasonProgressing, Message: msg})
		return stopAfter(healthRequeue)
	}
	r.setWaitStart(g.Name, rev) // the next attempt waits the full timeout again
	return r.failed(ctx, g, v1alpha1.ReasonHealthCheckFailed, fmt.Sprintf("revision %s applied but not healthy within %s: %s", short(rev), r.timeout(g), strings.Join(sum.Unhealthy, "; ")))
}

func (r *GuardReconciler) setWaitStart(guard, rev string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.waits == nil {
		r.waits = map[string]waitStart{}
	}
	r.waits[guard] = waitStart{rev: rev, at: time.Now()}
}

// waitStart is when the guard began to wait for rev's health.
func (r *GuardReconciler) waitStart(guard, rev string) time.Time {
	r.mu.Lock()
	defer r.mu.Unlock()
	if w, ok := r.waits[guard]; ok && w.rev == rev {
		return w.at
	}
	now := time.Now()
	if r.waits == nil {
		r.waits = map[string]waitStart{}
	}
	r.waits[guard] = waitStart{rev: rev, at: now}
	return now
}

type waitStart struct {
	rev string
	at  time.Time
}

// summarizeHealth sets the Guard's health in its status.
func (r *GuardReconciler) summarizeHealth(ctx context.Context, g *v1alpha1.Guard, snap *render.Snapshot) HealthSummary {
	if r.Health == nil {
		return HealthSummary{State: health.Healthy}
	}
	// One status write: with what the watch shows of this reconcile's applies.
	r.Health.AwaitObserved(ctx, snap)
	sum := r.Health.Summarize(ctx, g, snap)
	setHealth(&g.Status, sum)
	return sum
}

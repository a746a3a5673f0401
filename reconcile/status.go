package reconcile

import (
	"context"
	"fmt"
	"sort"
	"strings"

	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/driftguard/driftguard/api/v1alpha1"
	"github.com/driftguard/driftguard/health"
	"github.com/driftguard/driftguard/redact"
)

func (r *GuardReconciler) stalled(g *v1alpha1.Guard, reason, msg string) {
	msg = redact.Text(msg) // errors quote URLs, which may hold credentials
	meta.RemoveStatusCondition(&g.Status.Conditions, v1alpha1.ConditionReconciling)
	meta.SetStatusCondition(&g.Status.Conditions, metav1.Condition{Type: v1alpha1.ConditionStalled, Status: metav1.ConditionTrue, Reason: reason, Message: msg})
	meta.SetStatusCondition(&g.Status.Conditions, metav1.Condition{Type: v1alpha1.ConditionReady, Status: metav1.ConditionFalse, Reason: reason, Message: msg})
}

func (r *GuardReconciler) notReady(g *v1alpha1.Guard, reason, msg string) {
	msg = redact.Text(msg)
	meta.RemoveStatusCondition(&g.Status.Conditions, v1alpha1.ConditionStalled)
	meta.SetStatusCondition(&g.Status.Conditions, metav1.Condition{Type: v1alpha1.ConditionReconciling, Status: metav1.ConditionTrue, Reason: v1alpha1.ReasonRetryingAfterError, Message: msg})
	meta.SetStatusCondition(&g.Status.Conditions, metav1.Condition{Type: v1alpha1.ConditionReady, Status: metav1.ConditionFalse, Reason: reason, Message: msg})
}

// patchStatus writes the status when it changed, as a merge patch of the
// difference, so that fields that became empty are removed too.
func (r *GuardReconciler) patchStatus(ctx context.Context, g *v1alpha1.Guard, before *v1alpha1.GuardStatus) error {
	withoutSecrets(&g.Status)
	if apiequality.Semantic.DeepEqual(before, &g.Status) {
		return nil
	}
	orig := &v1alpha1.Guard{ObjectMeta: metav1.ObjectMeta{Name: g.Name}, Status: *before}
	patched := &v1alpha1.Guard{ObjectMeta: metav1.ObjectMeta{Name: g.Name}, Status: g.Status}
	if err := r.Client.Status().Patch(ctx, patched, client.MergeFrom(orig)); err != nil {
		if apierrors.IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("update status of guard %s: %w", g.Name, err)
	}
	r.Writes.wrote(g.Name, patched.ResourceVersion)
	return nil
}

// withoutSecrets replaces every secret value the process knows
// (redact.Secrets: decrypted, from Secrets) in the texts of a Guard's
// status, whoever wrote them: condition messages and the lists of drifted,
// unhealthy and failed objects (errors of the API server quote values).
func withoutSecrets(st *v1alpha1.GuardStatus) {
	if !redact.Secrets.Active() {
		return
	}
	for i := range st.Conditions {
		st.Conditions[i].Message = redact.Secrets.String(st.Conditions[i].Message)
	}
	for i := range st.Unhealthy {
		st.Unhealthy[i].Message = redact.Secrets.String(st.Unhealthy[i].Message)
	}
	for i := range st.Failed {
		st.Failed[i].Error = redact.Secrets.String(st.Failed[i].Error)
	}
	if st.Sync != nil {
		for i := range st.Sync.Objects {
			o := &st.Sync.Objects[i]
			o.Reason = redact.Secrets.String(o.Reason)
			for j := range o.Paths {
				o.Paths[j] = redact.Secrets.String(o.Paths[j])
			}
		}
	}
}

// setDegraded reports fights with other field managers as the Degraded condition.
func setDegraded(st *v1alpha1.GuardStatus, fights []string) {
	if len(fights) == 0 {
		meta.RemoveStatusCondition(&st.Conditions, v1alpha1.ConditionDegraded)
		return
	}
	msg := strings.Join(fights, "; ")
	if len(fights) > 3 {
		msg = strings.Join(fights[:3], "; ") + fmt.Sprintf("; and %d more", len(fights)-3)
	}
	meta.SetStatusCondition(&st.Conditions, metav1.Condition{Type: v1alpha1.ConditionDegraded, Status: metav1.ConditionTrue, Reason: v1alpha1.ReasonFightingOtherManager, Message: msg})
}

// setAuditCondition reports audit sinks that fail: condition AuditSinks
// False naming them (records still reach the sinks that work); no
// condition while every sink works.
func setAuditCondition(st *v1alpha1.GuardStatus, errs map[string]error) {
	var failing []string
	for name, err := range errs {
		if err != nil {
			failing = append(failing, name+": "+err.Error())
		}
	}
	if len(failing) == 0 {
		meta.RemoveStatusCondition(&st.Conditions, v1alpha1.ConditionAuditSinks)
		return
	}
	sort.Strings(failing)
	meta.SetStatusCondition(&st.Conditions, metav1.Condition{Type: v1alpha1.ConditionAuditSinks, Status: metav1.ConditionFalse, Reason: v1alpha1.ReasonSinkFailing,
		Message: truncate("audit records do not reach "+strings.Join(failing, "; ")+"; the other sinks keep them", 1000)})
}

// setHealth writes a health summary into a Guard's status.
func setHealth(st *v1alpha1.GuardStatus, sum HealthSummary) {
	st.Health = string(sum.State)
	st.Unhealthy = sum.Objects
	status := metav1.ConditionFalse
	if sum.State == health.Healthy {
		status = metav1.ConditionTrue
	}
	msg := "every object is healthy"
	if sum.Count > 0 {
		msg = fmt.Sprintf("%d objects not healthy: %s", sum.Count, strings.Join(sum.Unhealthy, "; "))
	}
	meta.SetStatusCondition(&st.Conditions, metav1.Condition{Type: v1alpha1.ConditionHealthy, Status: status, Reason: string(sum.State), Message: msg})
}

// outcome names the result of a reconcile for driftguard_sync_total.
func outcome(g *v1alpha1.Guard) string {
	ready := meta.FindStatusCondition(g.Status.Conditions, v1alpha1.ConditionReady)
	switch {
	case ready != nil && ready.Status == metav1.ConditionTrue:
		if g.Status.PendingRevision != "" {
			return "blocked"
		}
		return "success"
	case ready != nil && (ready.Reason == v1alpha1.ReasonDependencyNotReady || ready.Reason == v1alpha1.ReasonProgressing):
		return "waiting"
	case ready != nil && (ready.Reason == v1alpha1.ReasonManualSyncRequired || ready.Reason == v1alpha1.ReasonSyncWindowClosed):
		return "blocked"
	}
	return "failed"
}

// maxDriftedListed bounds status.drifted.
const maxDriftedListed = 20

// maxFailedListed bounds status.failed.
const maxFailedListed = 20

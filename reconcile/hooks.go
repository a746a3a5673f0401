package reconcile

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/driftguard/driftguard/apply"
	"github.com/driftguard/driftguard/audit"
	"github.com/driftguard/driftguard/health"
	"github.com/driftguard/driftguard/render"
)

// hookPoll is how often a running hook is looked at.
const hookPoll = 500 * time.Millisecond

// HookError is a hook that could not be created, or that failed.
type HookError struct {
	Hook  *Hook
	Phase Phase
	// Name is the hook's name in the cluster (generated for generateName).
	Name string
	Err  error
}

func (e *HookError) Error() string {
	k := e.Hook.Object.Key
	k.Name = e.Name
	return fmt.Sprintf("%s hook %s (%s): %v", e.Phase, k.Display(), where(e.Hook.Object.Source), e.Err)
}

func (e *HookError) Unwrap() error { return e.Err }

// runHooks runs the hooks of a phase (of one wave for PhaseSync), a group
// of one wave and weight at a time: every hook of the group is created,
// then each is waited for. The first group with a hook that fails ends the
// phase with a *HookError.
func (r *GuardReconciler) runHooks(ctx context.Context, a *attempt, phase Phase, wave *int, deadline time.Time) error {
	for _, group := range a.plan.HooksAt(phase, a.install, wave) {
		created := make([]*unstructured.Unstructured, 0, len(group))
		var errs []error
		for _, h := range group {
			u, earlier, err := a.applier.createHook(ctx, h, a.g.Name, a.inv, deadline)
			if earlier != nil {
				r.recordHook(ctx, a, h, phase, earlier, string(apply.Deleted), "before-hook-creation", "")
			}
			if err != nil {
				errs = append(errs, &HookError{Hook: h, Phase: phase, Name: h.Object.Key.Name, Err: err})
				created = append(created, nil)
				continue
			}
			created = append(created, u)
			r.recordHook(ctx, a, h, phase, u, "created", "", "")
		}
		for i, h := range group {
			u := created[i]
			if u == nil {
				continue
			}
			err := a.applier.waitHook(ctx, u, deadline)
			outcome := "succeeded"
			if err != nil {
				outcome = "failed"
				errs = append(errs, &HookError{Hook: h, Phase: phase, Name: u.GetName(), Err: err})
			}
			r.recordHook(ctx, a, h, phase, u, outcome, "", errString(err))
			if (err == nil && h.DeleteSucceeded) || (err != nil && h.DeleteFailed) {
				policy := "hook-succeeded"
				if err != nil {
					policy = "hook-failed"
				}
				if derr := a.applier.deleteHook(ctx, u); derr != nil {
					errs = append(errs, &HookError{Hook: h, Phase: phase, Name: u.GetName(), Err: derr})
				} else {
					if uid, ok := a.inv.HookUID(hookKey(u)); ok && uid == u.GetUID() {
						a.inv.RemoveHook(hookKey(u))
					}
					r.recordHook(ctx, a, h, phase, u, string(apply.Deleted), policy, "")
				}
			}
		}
		if err := errors.Join(errs...); err != nil {
			return err
		}
	}
	return nil
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// recordHook writes an audit record of what happened to a hook.
func (r *GuardReconciler) recordHook(ctx context.Context, a *attempt, h *Hook, phase Phase, u *unstructured.Unstructured, action, policy, errMsg string) {
	rec := audit.Record{Type: audit.Apply, Guard: a.g.Name, User: apply.FieldManager, Operation: "HOOK", Action: action,
		Object: audit.ObjectOf(h.Object), Source: audit.SourceOf(h.Object.Source), Reason: "hook " + string(phase)}
	if policy != "" {
		rec.Reason += " (" + policy + ")"
	}
	rec.Object.Name = u.GetName()
	if action == string(apply.Deleted) {
		rec.Type, rec.Operation = audit.Prune, "DELETE"
	}
	if errMsg != "" {
		rec.Type, rec.Error = audit.Error, errMsg
	}
	r.record(ctx, rec)
}

// createHook creates a hook as the Guard's identity. A hook with a name
// whose delete policy is before-hook-creation first deletes the object of
// that name from an earlier run, and waits until it is gone; only an object
// that is this Guard's hook (HookLabel) or that the Guard applied itself
// (its inventory, with the same UID: a hook applied as a plain object by an
// earlier version) is deleted. earlier names the object it deleted (name
// and UID only), nil when none.
func (a engine) createHook(ctx context.Context, h *Hook, guard string, inv *Inventory, deadline time.Time) (u, earlier *unstructured.Unstructured, err error) {
	u = h.Object.Obj().DeepCopy()
	if u.GetName() != "" && h.DeleteBefore {
		if earlier, err = a.deleteEarlierHook(ctx, u, guard, inv, deadline); err != nil {
			return nil, earlier, err
		}
	}
	if err := a.Client.Create(ctx, u, client.FieldOwner(apply.FieldManager)); err != nil {
		if apierrors.IsAlreadyExists(err) {
			return nil, earlier, errors.New("an object of that name exists from an earlier run and the hook's delete policy has no before-hook-creation")
		}
		return nil, earlier, fmt.Errorf("create: %w", a.ExplainForbidden(err, "create", u.GroupVersionKind(), u.GetNamespace()))
	}
	if h.Object.Obj().GetName() != "" {
		inv.PutHook(hookKey(u), u.GetUID())
	}
	if h.ServerLabels {
		if err := a.LabelCreatedJob(ctx, u); err != nil {
			return nil, earlier, err
		}
	}
	return u, earlier, nil
}

// hookKey is the inventory key of a hook as created.
func hookKey(u *unstructured.Unstructured) render.ObjectKey {
	return render.ObjectKey{Group: u.GroupVersionKind().Group, Kind: u.GetKind(), Namespace: u.GetNamespace(), Name: u.GetName()}
}

// deleteEarlierHook deletes the object named as hook u, when it is one the
// guard may delete, and waits until it is gone. deleted names it (name and
// UID only) once the delete was sent.
func (a engine) deleteEarlierHook(ctx context.Context, u *unstructured.Unstructured, guard string, inv *Inventory, deadline time.Time) (deleted *unstructured.Unstructured, err error) {
	live := &metav1.PartialObjectMetadata{}
	live.SetGroupVersionKind(u.GroupVersionKind())
	err = a.hookReader().Get(ctx, client.ObjectKey{Namespace: u.GetNamespace(), Name: u.GetName()}, live)
	if apply.IsNotFoundOrGone(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read the object of an earlier run: %w", a.ExplainForbidden(err, "get", u.GroupVersionKind(), u.GetNamespace()))
	}
	key := hookKey(u)
	entry, applied := inv.Get(key)
	hookUID, created := inv.HookUID(key)
	labels := live.GetLabels()
	switch {
	case labels[apply.GuardLabel] != "" && labels[apply.GuardLabel] != guard:
		// Another Guard's Git declares it and that Guard applied it over
		// the hook (the UID stays): its object now, which this Guard's
		// account (exempt from the webhook) must not delete.
		return nil, fmt.Errorf("guard %s manages the object of that name now: not deleted, not replaced", labels[apply.GuardLabel])
	case created && hookUID == live.GetUID():
		// The hook the guard created last: a label anyone may set is
		// never the reason to delete.
	case labels[apply.GuardLabel] == guard && applied && entry.UID == live.GetUID():
		inv.Remove(key) // a hook now: no longer the Guard's to keep or prune
	default:
		return nil, fmt.Errorf("an object of that name exists that guard %s did not create as this hook (its inventory has another UID or none): not deleted, not replaced", guard)
	}
	inv.RemoveHook(key)
	uid := live.GetUID()
	if err := a.Client.Delete(ctx, live, client.PropagationPolicy(metav1.DeletePropagationBackground), client.Preconditions{UID: &uid}); err != nil && !apply.IsNotFoundOrGone(err) && !apierrors.IsConflict(err) {
		return nil, fmt.Errorf("delete the object of an earlier run (before-hook-creation): %w", a.ExplainForbidden(err, "delete", u.GroupVersionKind(), u.GetNamespace()))
	}
	deleted = &unstructured.Unstructured{}
	deleted.SetName(live.GetName())
	deleted.SetUID(uid)
	err = wait.PollUntilContextTimeout(ctx, hookPoll, time.Until(deadline), true, func(ctx context.Context) (bool, error) {
		cur := &metav1.PartialObjectMetadata{}
		cur.SetGroupVersionKind(u.GroupVersionKind())
		err := a.hookReader().Get(ctx, client.ObjectKey{Namespace: u.GetNamespace(), Name: u.GetName()}, cur)
		if apply.IsNotFoundOrGone(err) {
			return true, nil
		}
		return err == nil && cur.GetUID() != uid, nil
	})
	if err != nil {
		return deleted, fmt.Errorf("the object of an earlier run is not gone (before-hook-creation): %w", err)
	}
	return deleted, nil
}

// waitHook waits until a Job or Pod hook completes (nil) or fails (its
// health message), as Helm and Argo CD do; a hook of any other kind is
// done once created.
func (a engine) waitHook(ctx context.Context, u *unstructured.Unstructured, deadline time.Time) error {
	gvk := u.GroupVersionKind()
	if (gvk.Group != "batch" || gvk.Kind != "Job") && (gvk.Group != "" || gvk.Kind != "Pod") {
		return nil
	}
	var last health.Result
	err := wait.PollUntilContextTimeout(ctx, hookPoll, time.Until(deadline), true, func(ctx context.Context) (bool, error) {
		live := &unstructured.Unstructured{}
		live.SetGroupVersionKind(gvk)
		if err := a.hookReader().Get(ctx, client.ObjectKey{Namespace: u.GetNamespace(), Name: u.GetName()}, live); err != nil {
			if apply.IsNotFoundOrGone(err) {
				return false, errors.New("deleted while it ran")
			}
			return false, nil // looked at again
		}
		if live.GetUID() != u.GetUID() {
			return false, errors.New("replaced by another object while it ran")
		}
		last = health.Assess(live)
		return last.State == health.Healthy || last.State == health.Degraded, nil
	})
	switch {
	case err != nil && wait.Interrupted(err) && last.State != "":
		return fmt.Errorf("not done before the sync's timeout (%s: %s)", last.State, last.Message)
	case err != nil && wait.Interrupted(err):
		return fmt.Errorf("not done before the sync's timeout: %w", err)
	case err != nil:
		return err
	case last.State == health.Degraded:
		return errors.New(strings.TrimPrefix(last.Message, "failed: "))
	}
	return nil
}

// deleteHook deletes a hook the guard created, by its UID, unless a Guard
// applied it since (it carries a Guard's label: another Guard's Git
// declares it, and it is that Guard's now).
func (a engine) deleteHook(ctx context.Context, u *unstructured.Unstructured) error {
	obj := &metav1.PartialObjectMetadata{}
	obj.SetGroupVersionKind(u.GroupVersionKind())
	err := a.hookReader().Get(ctx, client.ObjectKey{Namespace: u.GetNamespace(), Name: u.GetName()}, obj)
	switch {
	case apply.IsNotFoundOrGone(err):
		return nil
	case err != nil:
		return fmt.Errorf("read the hook to delete (hook-delete-policy): %w", a.ExplainForbidden(err, "get", u.GroupVersionKind(), u.GetNamespace()))
	case obj.GetUID() != u.GetUID():
		return nil // replaced by someone: not the hook
	case obj.GetLabels()[apply.GuardLabel] != "":
		return fmt.Errorf("guard %s manages the hook's object now: not deleted (hook-delete-policy)", obj.GetLabels()[apply.GuardLabel])
	}
	uid := u.GetUID()
	err = a.Client.Delete(ctx, obj, client.PropagationPolicy(metav1.DeletePropagationBackground), client.Preconditions{UID: &uid})
	if err != nil && !apply.IsNotFoundOrGone(err) && !apierrors.IsConflict(err) {
		return fmt.Errorf("delete (hook-delete-policy): %w", a.ExplainForbidden(err, "delete", u.GroupVersionKind(), u.GetNamespace()))
	}
	return nil
}

// hookReader reads hooks straight from the API server, as the Guard's
// service account when it has one (an impersonating client, not cached).
// Never through a cache: the manager's selects objects by the inventory
// label, which hooks do not carry, and a cache would watch every Job of
// the cluster.
func (a engine) hookReader() client.Reader {
	if a.Identity().User != "" {
		return a.Client
	}
	return a.APIReader()
}

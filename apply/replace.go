package apply

import (
	"context"
	"fmt"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/driftguard/driftguard/render"
)

// isImmutable reports an update the API server refused because it changes
// a field that cannot change (a Job's template, a Service's clusterIP, a
// Deployment's selector).
func isImmutable(err error) bool {
	if !apierrors.IsInvalid(err) {
		return false
	}
	msg := err.Error()
	return strings.Contains(msg, "immutable") || strings.Contains(msg, "may not change") || strings.Contains(msg, "cannot be changed")
}

// replace deletes the object, waits until it is gone, and creates it from
// Git. (Self-heal may recreate it first, from the same Git; that counts.)
func (a *Applier) replace(ctx context.Context, o *render.Object) (Action, types.UID, error) {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(o.GVK())
	if err := a.APIReader().Get(ctx, client.ObjectKey{Namespace: o.Key.Namespace, Name: o.Key.Name}, u); err != nil && !IsNotFoundOrGone(err) {
		return Failed, "", fmt.Errorf("replace: %w", err)
	}
	u.SetNamespace(o.Key.Namespace)
	u.SetName(o.Key.Name)
	stored, err := a.recreate(ctx, o, u, "replace", client.PropagationPolicy(metav1.DeletePropagationBackground))
	if err != nil {
		return Failed, "", err
	}
	return Replaced, stored.GetUID(), nil
}

// recreate deletes u with opts, waits until it is gone, and creates want
// from Git, returning what the API server stored; what names the step in
// errors.
func (a *Applier) recreate(ctx context.Context, want *render.Object, u *unstructured.Unstructured, what string, opts ...client.DeleteOption) (*unstructured.Unstructured, error) {
	if err := a.Client.Delete(ctx, u, opts...); err != nil && !IsNotFoundOrGone(err) {
		return nil, fmt.Errorf("%s: delete: %w", what, a.ExplainForbidden(err, "delete", want.GVK(), want.Key.Namespace))
	}
	if err := a.waitGone(ctx, u); err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	_, stored, err := a.write(ctx, want, nil, false)
	if err != nil {
		return nil, fmt.Errorf("%s: create: %w", what, err)
	}
	return stored, nil
}

// waitGone polls until the object u was no longer exists (its finalizers
// ran): not found, or found with another UID.
func (a *Applier) waitGone(ctx context.Context, u *unstructured.Unstructured) error {
	reader := a.APIReader()
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		probe := &unstructured.Unstructured{}
		probe.SetGroupVersionKind(u.GroupVersionKind())
		err := reader.Get(ctx, client.ObjectKeyFromObject(u), probe)
		if IsNotFoundOrGone(err) {
			return true, nil
		}
		return err == nil && probe.GetUID() != u.GetUID(), err
	})
	if err != nil {
		return fmt.Errorf("wait until %s %s is deleted: %w", u.GetKind(), client.ObjectKeyFromObject(u), err)
	}
	return nil
}

// APIReader is what lists (prune) and reads of definitions go through: the
// guard's own Reader, else Client.
func (a *Applier) APIReader() client.Reader {
	if a.Reader != nil {
		return a.Reader
	}
	return a.Client
}

// Locked reports whether live is a ConfigMap or Secret someone made
// immutable (immutable: true where Git does not set it): the API server
// refuses every change of its data, and of the field itself, so no apply
// or patch brings it back to Git (ReplaceLocked does).
func Locked(want *render.Object, live *unstructured.Unstructured) bool {
	if live == nil || want.Key.Group != "" || (want.Key.Kind != "ConfigMap" && want.Key.Kind != "Secret") {
		return false
	}
	on, _, _ := unstructured.NestedBool(live.Object, "immutable")
	inGit, _, _ := unstructured.NestedBool(want.Obj().Object, "immutable")
	return on && !inGit
}

// ReplaceLocked deletes a Locked object, the one live is and no other
// (UID and resourceVersion preconditions: a newer object is left alone
// and the error says so), waits until it is gone, and creates it from
// Git.
func (a *Applier) ReplaceLocked(ctx context.Context, want *render.Object, live *unstructured.Unstructured) error {
	uid, rv := live.GetUID(), live.GetResourceVersion()
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(want.GVK())
	u.SetNamespace(live.GetNamespace())
	u.SetName(live.GetName())
	u.SetUID(uid)
	_, err := a.recreate(ctx, want, u, "replace the "+want.Key.Kind+" made immutable", client.Preconditions{UID: &uid, ResourceVersion: &rv})
	return err
}

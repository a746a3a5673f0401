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
	if err := a.Client.Delete(ctx, u, client.PropagationPolicy(metav1.DeletePropagationBackground)); err != nil && !IsNotFoundOrGone(err) {
		return Failed, "", fmt.Errorf("replace: delete: %w", a.ExplainForbidden(err, "delete", o.GVK(), o.Key.Namespace))
	}
	if err := a.waitGone(ctx, u); err != nil {
		return Failed, "", fmt.Errorf("replace: %w", err)
	}
	_, stored, err := a.write(ctx, o, nil, false)
	if err != nil {
		return Failed, "", fmt.Errorf("replace: create: %w", err)
	}
	return Replaced, stored.GetUID(), nil
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

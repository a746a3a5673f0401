package app

import (
	"context"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/driftguard/driftguard/drift"
	"github.com/driftguard/driftguard/reconcile"
	"github.com/driftguard/driftguard/render"
)

// reverter adapts the Applier to the informer's Reverter: each write acts
// as the identity of the Guard the object belongs to.
type reverter struct{ a *reconcile.Applier }

func (r reverter) Revert(ctx context.Context, guard string, want *render.Object, live *unstructured.Unstructured) error {
	a, err := r.a.ForGuard(ctx, guard)
	if err != nil {
		return err
	}
	_, err = a.Revert(ctx, want, live)
	return err
}

func (r reverter) DryRun(ctx context.Context, guard string, want *render.Object, live *unstructured.Unstructured) error {
	a, err := r.a.ForGuard(ctx, guard)
	if err != nil {
		return err
	}
	return a.DryRun(ctx, want, live)
}

func (r reverter) RemoveAdditions(ctx context.Context, guard string, live *unstructured.Unstructured, added []drift.Change) error {
	if len(added) == 0 {
		return nil
	}
	a, err := r.a.ForGuard(ctx, guard)
	if err != nil {
		return err
	}
	return a.RemoveAdditions(ctx, live, added)
}

func (r reverter) Options(desired *unstructured.Unstructured, live map[string]any) drift.Options {
	return r.a.Options(desired, live)
}

func (r reverter) ClearAnnotations(ctx context.Context, guard string, live *unstructured.Unstructured, keys ...string) error {
	a, err := r.a.ForGuard(ctx, guard)
	if err != nil {
		return err
	}
	return a.ClearAnnotations(ctx, live, keys...)
}

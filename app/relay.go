package app

import (
	"context"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/driftguard/driftguard/api/v1alpha1"
	"github.com/driftguard/driftguard/health"
	"github.com/driftguard/driftguard/reconcile"
	"github.com/driftguard/driftguard/selfheal"
	"github.com/driftguard/driftguard/webhook"
)

// relay carries the notices that run against the order of construction.
// Each component is built ready, after what it reads: the certificates
// before the registrar (which registers their CA), the applier before
// self-heal (which reverts through it), self-heal before the health
// tracker, the reconciler and the drift status writer (which read it). What
// an earlier component tells a later one goes through the relay: it is
// handed to the earlier components when they are built and bound once to the
// later ones, before the manager starts them. A notice before that is a
// wiring error and panics, but for the CA bundle's, which the registrar
// reads anyway when it first registers.
type relay struct {
	bound     bool
	watcher   *selfheal.Watcher
	health    *reconcile.HealthTracker
	inventory *reconcile.InventoryStore
	status    *reconcile.DriftStatus
	guards    *reconcile.GuardReconciler
	registrar *webhook.Registrar // nil without --webhook-register
}

// bind gives the relay the components it tells; registrar may be nil.
func (r *relay) bind(c *controllers) {
	r.watcher, r.health, r.inventory = c.watcher, c.health, c.inventory
	r.status, r.guards, r.registrar = c.status, c.guards, c.registrar
	r.bound = true
}

func (r *relay) must() *relay {
	if !r.bound {
		panic("app: a component was told of a change before the wiring was complete")
	}
	return r
}

// Live is self-heal's copy of a live object (the applier skips objects in
// sync without an API call).
func (r *relay) Live(gvk schema.GroupVersionKind, namespace, name string) (*unstructured.Unstructured, bool) {
	return r.must().watcher.Live(gvk, namespace, name)
}

func (r *relay) LiveVersion(gvk schema.GroupVersionKind, namespace, name string) (string, bool) {
	return r.must().watcher.LiveVersion(gvk, namespace, name)
}

// applied hands the answer to each of the guard's own applies (self-heal's
// too) to the health tracker and to the inventory of what the guard
// applied, the only objects prune may delete.
func (r *relay) applied(stored *unstructured.Unstructured) {
	r.must().health.Applied(stored)
	r.inventory.Applied(stored)
}

// driftChanged: self-heal saw a Guard's set of drifted objects change.
func (r *relay) driftChanged(guard string) { r.must().status.Changed(guard) }

// healthChanged: self-heal saw one of a Guard's objects change health state.
func (r *relay) healthChanged(guard string) { r.must().status.HealthChanged(guard) }

// recheck: the health tracker asks for a Guard's health to be summed up again.
func (r *relay) recheck(guard string) { r.must().status.Recheck(guard) }

// guardHealthChanged: a Guard's health state changed (events, Ready).
func (r *relay) guardHealthChanged(g *v1alpha1.Guard, sum reconcile.HealthSummary, prev health.State) {
	r.must().guards.HealthChanged(g, sum, prev)
}

// caBundleChanged: the serving certificate's CA changed; the registrar
// registers the new bundle.
func (r *relay) caBundleChanged() {
	if r.bound && r.registrar != nil {
		r.registrar.Changed()
	}
}

// leftoverChanged returns what the compiled layer calls when what it
// leaves to the webhooks changed: the registrar narrows or widens them at
// once (retried by the registrar when that fails).
func (r *relay) leftoverChanged(ctx context.Context) func() {
	return func() {
		reg := r.must().registrar
		if err := reg.Sync(ctx); err != nil {
			reg.Changed()
		}
	}
}

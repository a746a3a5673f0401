// Package app wires the guard's parts into one controller-runtime manager.
// Run reads top to bottom: the clients and the guard's own identity, the
// webhook's serving certificates (certs.go), the manager (manager.go), the
// audit log (auditlog.go), the policy engine (policy.go), the controllers
// in the order they read one another (controllers.go: apply, the compiled
// admission layer, self-heal and health, the webhook registrar, the Guard
// reconciler and its follower, the drift status writer), and the admission
// webhook (admission.go); then it starts the manager. Each component is
// built ready; what an earlier one tells a later one goes through the relay
// (relay.go). The behaviour lives in the package of its concept (reconcile,
// informer, webhook, compiled, protect, settings, certs, notify); what is
// left here adapts them to one another and to the options.
package app

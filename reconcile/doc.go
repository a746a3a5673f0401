// Package reconcile is the Guard controller: it makes the cluster equal to
// a snapshot of each Guard's source, one sync at a time (fetch, render,
// waves and hooks in their order, prune of what left Git, health, status).
// Every write goes through the server-side apply engine, package apply. It
// decides no policy and compares nothing itself: package drift says what is
// in sync.
package reconcile

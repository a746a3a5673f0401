// Package apply is the guard's server-side apply engine: it writes Git's
// objects to the cluster as the guard's field manager (staged, in parallel,
// skipping what is in sync), reverts and dry-runs one object for self-heal,
// recreates an object whose update an immutable field refuses (force),
// removes fields someone else added, and decorates a snapshot with the
// guard's labels. Each write acts as the identity of its Guard
// (Identities). It decides no policy, orders no waves and runs no hooks:
// package reconcile drives it for a sync, package selfheal for a revert.
package apply

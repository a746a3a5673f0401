// Package reconcile makes the cluster equal to a snapshot: staged server-side
// apply, prune of what left Git, and Revert for self-heal. It decides no
// policy and compares nothing itself: package drift says what is in sync.
package reconcile

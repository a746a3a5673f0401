// Package gitwrite writes commits to the Git repository a Guard follows:
// it clones one branch into memory, edits the tree of its newest commit,
// commits and pushes. When the branch moved on the remote in the meantime
// (the push is not a fast-forward), it fetches the branch again, applies the
// edit again on top and retries, a few times.
//
// `driftguard adopt` uses it to write live values into a manifest file (with
// package yamledit), `driftguard rollback` to restore a folder to an older
// revision.
package gitwrite

// Package render turns the files of one revision into the desired state:
// plain YAML and JSON manifests, Kustomize overlays, Helm charts (in a
// child process, with values from the cluster and post-renderers), ${VAR}
// substitution and SOPS decryption, all within Limits. Object, ObjectKey
// and Snapshot are that desired state; Store holds the last good Snapshot
// of every Guard and says which Guard owns an object. It reads any fs.FS
// (package source gives it the tree of a commit or an unpacked archive;
// LocalFS a folder on disk) and fetches nothing itself.
package render

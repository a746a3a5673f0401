package reconcile

import "github.com/driftguard/driftguard/apply"

// engine is the server-side apply engine (package apply) as one attempt of
// the Guard controller drives it, acting as the Guard's identity, with what
// only the Guard controller does with it: run hooks (hooks.go), create the
// namespaces of spec.createNamespace (namespaces.go), prune (prune.go).
type engine struct{ *apply.Applier }

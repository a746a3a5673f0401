// Package drift decides whether a live object is equal to the object Git
// declares. It is pure: no I/O, no clients. The informer, the admission
// webhook and the full reconcile all call Compare, so the three can never
// disagree about what "in sync" means.
//
// In sync means: every field that Git sets has the value Git sets. Fields Git
// does not set (defaults, status, fields owned by other controllers) are not
// drift. Server-set metadata is never compared.
//
// Ignore rules hide more fields: CompileRules compiles them once, For picks
// those that match one object and returns the Options to pass to Compare.
// docs/drift.md describes both.
package drift

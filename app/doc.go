// Package app wires the guard's parts into one controller-runtime manager:
// the Guard reconciler, the drift watcher, the admission webhook, the policy
// engine and the audit log. It holds no logic of its own beyond wiring.
package app

// Package webhook serves the admission webhooks that see every manual change
// to a managed object before it is stored. It compares through package drift,
// asks package policy, and answers deny, allow or warn; it never compares
// objects itself.
package webhook

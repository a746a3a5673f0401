// Package health tells whether a live Kubernetes object is doing what it was
// applied for: a Deployment rolled out, a Job completed, a Service with
// endpoints, a custom resource Ready.
//
// Assess maps an object to one of seven states (Healthy, Progressing,
// Degraded, Suspended, Missing, Unknown, and NoHealth for an object that
// says nothing about its health) with a short message a person can act on.
// Built-in kinds have a rule each; every other kind is read through its
// status conditions and, underneath, sigs.k8s.io/cli-utils kstatus. Objects
// related to the one assessed (the EndpointSlices of a Service) come from a
// Lookup the caller passes, and a Custom assessor (the Rego engine of package
// policy) can override the built-in result for the objects it knows.
//
// The package does no I/O of its own: a Lookup does the reading.
package health

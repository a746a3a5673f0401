// Package compiled compiles the default policy's decision, and the desired
// state it protects, into admission policies the API server evaluates
// itself: ValidatingAdmissionPolicies that deny (or warn about) a change,
// scale or delete of a managed object by anyone the default policy would
// deny, and an index of the managed objects (ConfigMaps the policies read
// as parameters) that says, per object, its enforcement, the fields its
// ignore rules hide and the Git file it comes from. Protection so compiled
// holds while the guard's process is down; the Keeper keeps the objects
// equal to what the guard wants.
//
// What is compiled, and what is left to the webhook, is in docs/policy.md
// ("Enforcement inside the API server").
package compiled

// Package selfheal keeps a cache of the live state of every managed object
// and compares each change with Git the moment it is seen. Drift is recorded
// and handed to a Reverter; this package applies nothing itself.
package selfheal

// Package selfheal keeps a cache of the live state of every managed object
// and compares each change with Git the moment it is seen. Drift is recorded
// and reverted through the server-side apply engine (package apply).
package selfheal

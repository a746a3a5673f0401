// Package jsonpack keeps the JSON of Kubernetes objects small in memory:
// Zstandard (its fastest level) with a dictionary of the keys and values
// most objects repeat, so that even an object of a few hundred bytes, which
// a compressor alone barely shrinks, takes a half to a fifth of its size.
// The guard holds every managed object twice (Git's, and the live one in
// the drift informers' cache) and decodes each only when it compares it, so
// the memory of 100,000 objects is mostly this JSON.
//
// Packed bytes live only in the process's memory: the dictionary may change
// from one version of the guard to the next.
package jsonpack

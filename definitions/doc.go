// Package definitions follows the API server's CustomResourceDefinitions
// while the guard runs. A definition changed by anyone (a new version, a
// schema field with other list semantics, the definition deleted and made
// again with another scope) makes the drift comparison read the schemas
// of its group again (schemas.Cache.Forget) and the REST mapping learn its
// kinds again (Mapper.Reset), as the guard's own apply of a definition
// does; without it both would keep what they read first until a restart.
package definitions

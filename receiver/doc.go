// Package receiver is the HTTP push receiver: a Git server posts to it
// after a push, the request is authenticated (token or HMAC signature),
// replays are refused, and the repository URLs it names are handed on so
// their Guards reconcile at once.
package receiver

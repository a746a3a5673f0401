package source

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
)

// CacheKey identifies what a request fetches and with which credentials:
// its kind, URL and artifact settings, and the content of its credentials
// (Git's Auth, an artifact's Credentials), as a hex SHA-256 that reveals
// none of them. Every cache of fetched content (the Git repositories on
// disk, the snapshots rendered from them, downloaded archives and bucket
// objects) is kept per CacheKey, so that a Guard never gets from a cache
// what another Guard fetched with other credentials: a Guard without the
// credentials of a private repository that pins a commit, digest or
// version it holds must fetch it itself, and the server refuses it. Two
// Guards with equal credentials share their caches.
func (r Request) CacheKey() string {
	h := sha256.New()
	field := func(s string) {
		var n [8]byte
		binary.BigEndian.PutUint64(n[:], uint64(len(s)))
		h.Write(n[:])
		h.Write([]byte(s))
	}
	kind := r.Kind
	if kind == "" {
		kind = SourceGit
	}
	field("driftguard source cache v1")
	field(string(kind))
	field(r.URL)
	r.Auth.writeKey(field)
	if a := r.Artifact; a != nil {
		field(a.Chart)
		field(a.Endpoint)
		field(a.Bucket)
		field(a.Region)
		if a.Insecure {
			field("insecure")
		} else {
			field("secure")
		}
		if c := a.Credentials; c != nil {
			field("credentials")
			for _, s := range []string{c.Username, c.Password, c.BearerToken, string(c.DockerConfig), c.AccessKey, c.SecretKey, c.SessionToken} {
				field(s)
			}
		} else {
			field("anonymous")
		}
	}
	return hex.EncodeToString(h.Sum(nil))
}

// writeKey writes the content of a's credentials to a CacheKey's hash.
func (a *Auth) writeKey(field func(string)) {
	if a == nil {
		field("anonymous")
		return
	}
	field("auth")
	for _, s := range []string{a.Username, a.Password, a.BearerToken, string(a.SSHKey), a.SSHKeyPassphrase, a.SSHUser, string(a.KnownHosts)} {
		field(s)
	}
}

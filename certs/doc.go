// Package certs keeps the admission webhook's TLS certificates: a CA and a
// serving certificate it signed, stored in a Secret that every replica
// shares, rotated before they expire, and served through
// tls.Config.GetCertificate so that a new certificate takes effect without a
// restart. A CA rollover lists the old and the new CA in the bundle the
// webhook configurations trust before any replica serves a certificate of the
// new CA, so no request fails on the way.
package certs

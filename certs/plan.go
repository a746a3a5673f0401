package certs

import (
	"crypto/x509"
	"fmt"
	"time"
)

// Policy says what the certificates must be and when they are renewed.
type Policy struct {
	// Hosts are the DNS names and IP addresses of the serving certificate.
	Hosts []string
	// CALifetime and CertLifetime are how long a new CA and a new serving
	// certificate are valid. Each is renewed when a third of its lifetime
	// is left (at two thirds of its life).
	CALifetime, CertLifetime time.Duration
	// Overlap is how long the new CA is trusted (in the bundle) before a
	// serving certificate it signed is served: time for every API server to
	// see the new bundle. Zero: CertLifetime/6, at most a minute.
	Overlap time.Duration
}

func (p Policy) overlap() time.Duration {
	if p.Overlap > 0 {
		return p.Overlap
	}
	return min(p.CertLifetime/6, time.Minute)
}

// Validate checks the lifetimes.
func (p Policy) Validate() error {
	if p.CertLifetime <= 0 || p.CALifetime <= 0 {
		return fmt.Errorf("certificate lifetimes must be positive (CA %s, serving %s)", p.CALifetime, p.CertLifetime)
	}
	if p.CALifetime < p.CertLifetime {
		return fmt.Errorf("the CA lifetime (%s) must be at least the serving certificate's (%s)", p.CALifetime, p.CertLifetime)
	}
	if len(p.Hosts) == 0 {
		return fmt.Errorf("the serving certificate needs at least one host name")
	}
	return nil
}

// renewAt is when a certificate valid until notAfter, issued for lifetime,
// is renewed: with a third of its lifetime left.
func renewAt(notAfter time.Time, lifetime time.Duration) time.Time {
	return notAfter.Add(-lifetime / 3)
}

// Fresh makes a new CA and a serving certificate it signed.
func (p Policy) Fresh(now time.Time) (*Bundle, error) {
	ca, err := newCA(now, p.CALifetime)
	if err != nil {
		return nil, err
	}
	serving, err := newServing(ca, p.Hosts, now, p.CertLifetime)
	if err != nil {
		return nil, err
	}
	return &Bundle{CAs: []*x509.Certificate{ca.cert}, caKey: ca.key, serving: serving}, nil
}

// Next decides what the Secret must hold next. It returns nil when b stays as
// it is, with why it changed otherwise, and when to look again.
//
// A serving certificate is renewed, signed by the newest CA, at two thirds of
// its life. A CA is renewed at two thirds of its life in two steps: first
// the new CA joins the bundle (the old one stays, and keeps signing the
// certificate served); once the bundle has been trusted for the overlap and
// trusted(newCA) confirms the webhook configurations carry it, a serving
// certificate of the new CA is issued. A CA leaves the bundle when it expires.
// trusted may be nil.
func (p Policy) Next(b *Bundle, now time.Time, trusted func(ca *x509.Certificate) bool) (next *Bundle, why string, wake time.Time, err error) {
	if b == nil {
		next, err = p.Fresh(now)
		return next, "no certificates yet", p.wake(next, now, false), err
	}
	n := &Bundle{CAs: []*x509.Certificate{b.CAs[0]}, caKey: b.caKey, serving: b.serving, RolloverAt: b.RolloverAt}
	changed := false
	// Expired CAs leave the bundle, except the newest.
	for _, ca := range b.CAs[1:] {
		if now.Before(ca.NotAfter) {
			n.CAs = append(n.CAs, ca)
		} else {
			changed, why = true, "an expired CA left the bundle"
		}
	}
	signedByNewest := n.serving.cert.CheckSignatureFrom(n.CAs[0]) == nil
	if signedByNewest && !n.RolloverAt.IsZero() {
		n.RolloverAt, changed, why = time.Time{}, true, "the CA rollover is complete"
	}
	// Step 1 of a CA rollover: trust a new CA.
	if signedByNewest && !now.Before(renewAt(n.CAs[0].NotAfter, p.CALifetime)) {
		ca, err := newCA(now, p.CALifetime)
		if err != nil {
			return nil, "", time.Time{}, err
		}
		n.CAs = append([]*x509.Certificate{ca.cert}, n.CAs...)
		n.caKey, n.RolloverAt = ca.key, now
		signedByNewest, changed, why = false, true, "CA renewed: the new CA joins the bundle"
	}
	cert := n.serving.cert
	switch {
	case !signedByNewest:
		// Step 2: serve a certificate of the new CA once it is trusted, or
		// at once when the old certificate is about to expire.
		urgent := !now.Before(cert.NotAfter.Add(-p.CertLifetime / 10))
		settled := !now.Before(n.RolloverAt.Add(p.overlap())) && (trusted == nil || trusted(n.CAs[0]))
		if settled || urgent {
			if err := p.reissue(n, now); err != nil {
				return nil, "", time.Time{}, err
			}
			n.RolloverAt, changed, why = time.Time{}, true, "serving certificate signed by the new CA"
		}
	case !now.Before(renewAt(cert.NotAfter, p.CertLifetime)):
		if err := p.reissue(n, now); err != nil {
			return nil, "", time.Time{}, err
		}
		changed, why = true, "serving certificate renewed"
	case !coversHosts(cert, p.Hosts):
		if err := p.reissue(n, now); err != nil {
			return nil, "", time.Time{}, err
		}
		changed, why = true, "serving certificate reissued for new host names"
	}
	if !changed {
		return nil, "", p.wake(b, now, n.serving.cert.CheckSignatureFrom(n.CAs[0]) != nil), nil
	}
	return n, why, p.wake(n, now, n.serving.cert.CheckSignatureFrom(n.CAs[0]) != nil), nil
}

func (p Policy) reissue(n *Bundle, now time.Time) error {
	ca := keyPair{cert: n.CAs[0], key: n.caKey}
	serving, err := newServing(ca, p.Hosts, now, p.CertLifetime)
	if err != nil {
		return err
	}
	n.serving = serving
	return nil
}

// wake is when Next has something to do for b: renew the serving certificate
// or the CA, drop an expired CA, or (rolling over) serve the new CA's
// certificate. Never sooner than 100ms from now.
func (p Policy) wake(b *Bundle, now time.Time, rollingOver bool) time.Time {
	at := renewAt(b.serving.cert.NotAfter, p.CertLifetime)
	if rollingOver {
		step := b.RolloverAt.Add(p.overlap())
		if !step.After(now) {
			step = now.Add(time.Second) // waiting for the bundle to be trusted
		}
		at = earliest(at, step, b.serving.cert.NotAfter.Add(-p.CertLifetime/10))
	} else {
		at = earliest(at, renewAt(b.CAs[0].NotAfter, p.CALifetime))
	}
	for _, ca := range b.CAs[1:] {
		at = earliest(at, ca.NotAfter)
	}
	if floor := now.Add(100 * time.Millisecond); at.Before(floor) {
		return floor
	}
	return at
}

func earliest(t time.Time, more ...time.Time) time.Time {
	for _, m := range more {
		if m.Before(t) {
			t = m
		}
	}
	return t
}

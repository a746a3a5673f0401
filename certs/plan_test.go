package certs

import (
	"bytes"
	"crypto/x509"
	"testing"
	"time"
)

// TestNextTimeline runs the rotation policy over many lifetimes with a clock
// that advances in steps, and an API server whose trusted bundle follows the
// Secret with a delay (the registrar injecting it). At every step the
// certificate served must verify against what the API server trusts.
func TestNextTimeline(t *testing.T) {
	for _, tc := range []struct {
		name                string
		ca, cert, step, lag time.Duration
		trustedCheck        bool
		wantCAs, wantCerts  int // at least
	}{
		{name: "short lifetimes, injection lags", ca: 90 * time.Second, cert: 30 * time.Second, step: 250 * time.Millisecond, lag: 2 * time.Second, trustedCheck: true, wantCAs: 5, wantCerts: 25},
		{name: "CA and certificate of one lifetime", ca: 30 * time.Second, cert: 30 * time.Second, step: 250 * time.Millisecond, lag: 500 * time.Millisecond, trustedCheck: true, wantCAs: 15, wantCerts: 15},
		{name: "defaults over two years, daily steps", ca: 5 * 365 * 24 * time.Hour, cert: 90 * 24 * time.Hour, step: 6 * time.Hour, lag: time.Minute, wantCAs: 1, wantCerts: 10},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := Policy{Hosts: []string{"127.0.0.1", "driftguard.driftguard-system.svc"}, CALifetime: tc.ca, CertLifetime: tc.cert}
			if err := p.Validate(); err != nil {
				t.Fatal(err)
			}
			now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
			end := now.Add(10 * tc.ca)
			if tc.ca > 365*24*time.Hour {
				end = now.Add(2 * 365 * 24 * time.Hour)
			}
			type injection struct {
				at  time.Time
				pem []byte
			}
			var pending []injection
			var trustedPEM []byte // what the API server trusts
			trusted := func(ca *x509.Certificate) bool {
				return bytes.Contains(trustedPEM, pemOf(ca))
			}
			if !tc.trustedCheck {
				trusted = nil
			}
			var b *Bundle
			cas, certs := 0, 0
			var lastCA, lastCert *x509.Certificate
			for ; now.Before(end); now = now.Add(tc.step) {
				// The registrar injects the Secret's bundle after a lag.
				for len(pending) > 0 && !pending[0].at.After(now) {
					trustedPEM = pending[0].pem
					pending = pending[1:]
				}
				next, why, wake, err := p.Next(b, now, trusted)
				if err != nil {
					t.Fatal(err)
				}
				if !wake.After(now) {
					t.Fatalf("%s: wake %s is not after now", now, wake)
				}
				if next != nil {
					if why == "" {
						t.Fatalf("%s: changed without a reason", now)
					}
					b = next
					pending = append(pending, injection{at: now.Add(tc.lag), pem: b.CAPEM()})
					if trustedPEM == nil { // the first registration
						trustedPEM = b.CAPEM()
					}
				}
				if len(b.CAs) > 3 {
					t.Fatalf("%s: %d CAs in the bundle", now, len(b.CAs))
				}
				if b.CAs[0] != lastCA {
					cas, lastCA = cas+1, b.CAs[0]
				}
				if b.Cert() != lastCert {
					certs, lastCert = certs+1, b.Cert()
				}
				// The served certificate is valid, and the API server trusts it.
				if now.Before(b.Cert().NotBefore) || !now.Before(b.Cert().NotAfter) {
					t.Fatalf("%s: serving certificate not valid (%s..%s)", now, b.Cert().NotBefore, b.Cert().NotAfter)
				}
				pool := x509.NewCertPool()
				pool.AppendCertsFromPEM(trustedPEM)
				if _, err := b.Cert().Verify(x509.VerifyOptions{Roots: pool, CurrentTime: now, DNSName: "driftguard.driftguard-system.svc"}); err != nil {
					t.Fatalf("%s: the API server would reject the served certificate: %v", now, err)
				}
				// What the Secret holds parses back to the same bundle.
				data, err := b.Data()
				if err != nil {
					t.Fatal(err)
				}
				back, err := Parse(data, b.Annotations())
				if err != nil {
					t.Fatalf("%s: %v", now, err)
				}
				if !bytes.Equal(back.CAPEM(), b.CAPEM()) || !back.RolloverAt.Equal(b.RolloverAt) {
					t.Fatalf("%s: the Secret does not round-trip", now)
				}
			}
			if cas < tc.wantCAs || certs < tc.wantCerts {
				t.Errorf("%d CAs and %d serving certificates, want at least %d and %d", cas, certs, tc.wantCAs, tc.wantCerts)
			}
			t.Logf("%d CAs, %d serving certificates", cas, certs)
		})
	}
}

func TestNextReissuesForNewHosts(t *testing.T) {
	p := Policy{Hosts: []string{"a.svc"}, CALifetime: time.Hour, CertLifetime: time.Hour}
	now := time.Now()
	b, err := p.Fresh(now)
	if err != nil {
		t.Fatal(err)
	}
	if next, _, _, _ := p.Next(b, now, nil); next != nil {
		t.Fatal("a fresh bundle changed at once")
	}
	p.Hosts = []string{"a.svc", "127.0.0.1"}
	next, why, _, err := p.Next(b, now, nil)
	if err != nil || next == nil || !coversHosts(next.Cert(), p.Hosts) {
		t.Fatalf("not reissued for new hosts: %v %v", why, err)
	}
	if !bytes.Equal(next.CAPEM(), b.CAPEM()) {
		t.Error("new host names changed the CA")
	}
}

func TestParseErrorsNameTheKey(t *testing.T) {
	p := Policy{Hosts: []string{"a.svc"}, CALifetime: time.Hour, CertLifetime: time.Hour}
	b, err := p.Fresh(time.Now())
	if err != nil {
		t.Fatal(err)
	}
	other, err := p.Fresh(time.Now())
	if err != nil {
		t.Fatal(err)
	}
	good, _ := b.Data()
	foreign, _ := other.Data()
	for _, tc := range []struct {
		name string
		mod  func(map[string][]byte)
		want string
	}{
		{"no CA", func(d map[string][]byte) { delete(d, KeyCABundle) }, KeyCABundle},
		{"CA key of another CA", func(d map[string][]byte) { d[KeyCAKey] = foreign[KeyCAKey] }, KeyCAKey},
		{"serving certificate of another CA", func(d map[string][]byte) { d[KeyCert], d[KeyKey] = foreign[KeyCert], foreign[KeyKey] }, KeyCert},
		{"garbage key", func(d map[string][]byte) { d[KeyKey] = []byte("x") }, KeyKey},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := map[string][]byte{}
			for k, v := range good {
				d[k] = v
			}
			tc.mod(d)
			_, err := Parse(d, nil)
			if err == nil || !bytes.Contains([]byte(err.Error()), []byte(tc.want)) {
				t.Fatalf("error %v does not name %s", err, tc.want)
			}
		})
	}
}

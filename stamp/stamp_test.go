package stamp

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"strings"
	"testing"
	"time"

	"github.com/driftguard/driftguard/api/v1alpha1"
)

func newKey(t *testing.T) *tls.Certificate {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return &tls.Certificate{PrivateKey: k}
}

func TestVerify(t *testing.T) {
	cert := newKey(t)
	s := NewSigner(KeyFromCertificate(func(*tls.ClientHelloInfo) (*tls.Certificate, error) { return cert, nil }))
	c := v1alpha1.ChangedBy{User: "alice", Groups: []string{"dev"}, Time: time.Date(2026, 12, 3, 10, 0, 0, 0, time.UTC), RequestUID: "r1"}
	issued, err := s.Issue(c, "apps/Deployment/shop/web")
	if err != nil {
		t.Fatal(err)
	}
	forged := c
	forged.User, forged.Groups = "system:kube-controller-manager", []string{"sre"}
	tests := []struct {
		name, value, object string
		want                bool
	}{
		{"issued", issued, "apps/Deployment/shop/web", true},
		{"other object", issued, "apps/Deployment/shop/api", false},
		{"written by hand", forged.String(), "apps/Deployment/shop/web", false},
		{"user altered", strings.Replace(issued, `"alice"`, `"bob"`, 1), "apps/Deployment/shop/web", false},
		{"time moved to 2099", strings.Replace(issued, "2026-12-03", "2099-12-03", 1), "apps/Deployment/shop/web", false},
		{"MAC of another stamp", strings.Replace(forged.String(), `}`, `,"mac":"`+macOf(t, issued)+`"}`, 1), "apps/Deployment/shop/web", false},
		{"not a stamp", "hello", "apps/Deployment/shop/web", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := s.Verify(tt.value, tt.object)
			if ok != tt.want {
				t.Fatalf("Verify = %v, want %v", ok, tt.want)
			}
			if ok && got.User != "alice" {
				t.Fatalf("user %q", got.User)
			}
		})
	}
	// After a rotation the previous key still verifies; two rotations later it does not.
	cert = newKey(t)
	if _, ok := s.Verify(issued, "apps/Deployment/shop/web"); !ok {
		t.Fatal("stamp of the previous key not verified after one rotation")
	}
	cert = newKey(t)
	if _, ok := s.Verify(issued, "apps/Deployment/shop/web"); ok {
		t.Fatal("stamp verified two rotations later")
	}
	// Another guard's key does not verify it.
	other := NewSigner(KeyFromCertificate(func(*tls.ClientHelloInfo) (*tls.Certificate, error) { return newKey(t), nil }))
	if _, ok := other.Verify(issued, "apps/Deployment/shop/web"); ok {
		t.Fatal("verified with another key")
	}
}

func macOf(t *testing.T, value string) string {
	c, ok := v1alpha1.ParseChangedBy(value)
	if !ok {
		t.Fatal("not a stamp")
	}
	return c.MAC
}

package certs

import (
	"crypto/x509"
	"encoding/pem"
	"os"
	"path/filepath"
	"testing"
)

// A certificate of NewStatic is valid for every host it was made for, and,
// written as a kubernetes.io/tls Secret would mount it, loads back as Files.
func TestStaticRoundTrip(t *testing.T) {
	c, err := NewStatic([]string{"127.0.0.1", "guard.driftguard-system.svc"})
	if err != nil {
		t.Fatal(err)
	}
	leaf, err := x509.ParseCertificate(c.Cert.Certificate[0])
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(c.CABundle()) {
		t.Fatal("CA PEM does not parse")
	}
	for _, host := range []string{"127.0.0.1", "guard.driftguard-system.svc"} {
		if _, err := leaf.Verify(x509.VerifyOptions{Roots: pool, DNSName: host}); err != nil {
			t.Fatalf("serving certificate not valid for %s: %v", host, err)
		}
	}
	dir := t.TempDir()
	key, err := x509.MarshalPKCS8PrivateKey(c.Cert.PrivateKey)
	if err != nil {
		t.Fatal(err)
	}
	files := map[string][]byte{
		KeyCert:     pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: c.Cert.Certificate[0]}),
		KeyKey:      pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: key}),
		KeyCABundle: c.CA,
	}
	for n, b := range files {
		if err := os.WriteFile(filepath.Join(dir, n), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	loaded := &Files{Dir: dir}
	if err := loaded.Load(); err != nil {
		t.Fatal(err)
	}
	served, err := loaded.GetCertificate(nil)
	if err != nil {
		t.Fatal(err)
	}
	if string(loaded.CABundle()) != string(c.CA) || len(served.Certificate) != 1 {
		t.Fatal("loaded certificates differ")
	}
	if err := (&Files{Dir: t.TempDir()}).Load(); err == nil {
		t.Fatal("an empty --cert-dir must be an error")
	}
}

package webhook

import (
	"crypto/x509"
	"encoding/pem"
	"os"
	"path/filepath"
	"testing"
)

func TestCertificatesRoundTrip(t *testing.T) {
	c, err := NewCertificates([]string{"127.0.0.1", "guard.driftguard-system.svc"})
	if err != nil {
		t.Fatal(err)
	}
	leaf, err := x509.ParseCertificate(c.Serving.Certificate[0])
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(c.CAPEM) {
		t.Fatal("CA PEM does not parse")
	}
	for _, host := range []string{"127.0.0.1", "guard.driftguard-system.svc"} {
		if _, err := leaf.Verify(x509.VerifyOptions{Roots: pool, DNSName: host}); err != nil {
			t.Fatalf("serving certificate not valid for %s: %v", host, err)
		}
	}
	// Written as a Secret would mount them, they load back.
	dir := t.TempDir()
	key, err := x509.MarshalPKCS8PrivateKey(c.Serving.PrivateKey)
	if err != nil {
		t.Fatal(err)
	}
	files := map[string][]byte{
		"tls.crt": pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: c.Serving.Certificate[0]}),
		"tls.key": pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: key}),
		"ca.crt":  c.CAPEM,
	}
	for n, b := range files {
		if err := os.WriteFile(filepath.Join(dir, n), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	loaded, err := LoadCertificates(dir)
	if err != nil {
		t.Fatal(err)
	}
	if string(loaded.CAPEM) != string(c.CAPEM) || len(loaded.Serving.Certificate) != 1 {
		t.Fatal("loaded certificates differ")
	}
	if _, err := LoadCertificates(t.TempDir()); err == nil {
		t.Fatal("an empty --cert-dir must be an error")
	}
}

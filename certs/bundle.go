package certs

import (
	"bytes"
	"crypto"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"time"
)

// Keys of the Secret, and the annotation that marks a CA rollover in progress.
const (
	KeyCABundle = "ca.crt" // the CAs to trust, newest first, PEM
	KeyCAKey    = "ca.key" // the newest CA's key
	KeyCert     = "tls.crt"
	KeyKey      = "tls.key"

	// RolloverAnnotation holds, while the serving certificate is still
	// signed by the previous CA, when the newest CA was added to the bundle
	// (RFC 3339).
	RolloverAnnotation = "driftguard.io/ca-rollover-started"
)

// Bundle is what the Secret holds: the CAs to trust (newest first), the
// newest CA's key, and the serving certificate and key.
type Bundle struct {
	CAs     []*x509.Certificate
	caKey   crypto.Signer
	serving keyPair
	// RolloverAt is when the newest CA was added while the serving
	// certificate was signed by an older one; zero when none is in progress.
	RolloverAt time.Time
}

// Cert is the serving certificate.
func (b *Bundle) Cert() *x509.Certificate { return b.serving.cert }

// CAPEM is the CA bundle to trust, PEM, newest CA first.
func (b *Bundle) CAPEM() []byte {
	var buf bytes.Buffer
	for _, ca := range b.CAs {
		_ = pem.Encode(&buf, &pem.Block{Type: "CERTIFICATE", Bytes: ca.Raw})
	}
	return buf.Bytes()
}

// TLS is the serving certificate and key for a tls.Config.
func (b *Bundle) TLS() (*tls.Certificate, error) {
	pair, err := tls.X509KeyPair(b.serving.certPEM, b.serving.keyPEM)
	if err != nil {
		return nil, fmt.Errorf("serving key pair: %w", err)
	}
	return &pair, nil
}

// Data is the Secret's data for the bundle.
func (b *Bundle) Data() (map[string][]byte, error) {
	keyDER, err := x509.MarshalPKCS8PrivateKey(b.caKey)
	if err != nil {
		return nil, fmt.Errorf("marshal CA key: %w", err)
	}
	return map[string][]byte{
		KeyCABundle: b.CAPEM(),
		KeyCAKey:    pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER}),
		KeyCert:     b.serving.certPEM,
		KeyKey:      b.serving.keyPEM,
	}, nil
}

// Annotations are the Secret's annotations for the bundle: the rollover
// mark, or none.
func (b *Bundle) Annotations() map[string]string {
	if b.RolloverAt.IsZero() {
		return nil
	}
	return map[string]string{RolloverAnnotation: b.RolloverAt.UTC().Format(time.RFC3339Nano)}
}

// Parse reads a bundle from a Secret's data and annotations. Errors name the
// key at fault.
func Parse(data map[string][]byte, annotations map[string]string) (*Bundle, error) {
	b := &Bundle{}
	rest := data[KeyCABundle]
	for {
		var block *pem.Block
		block, rest = pem.Decode(rest)
		if block == nil {
			break
		}
		ca, err := x509.ParseCertificate(block.Bytes)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", KeyCABundle, err)
		}
		b.CAs = append(b.CAs, ca)
	}
	if len(b.CAs) == 0 {
		return nil, fmt.Errorf("%s: no certificate", KeyCABundle)
	}
	key, err := parseKey(data[KeyCAKey])
	if err != nil {
		return nil, fmt.Errorf("%s: %w", KeyCAKey, err)
	}
	if !samePublicKey(key.Public(), b.CAs[0].PublicKey) {
		return nil, fmt.Errorf("%s does not belong to the first CA of %s", KeyCAKey, KeyCABundle)
	}
	b.caKey = key
	pair, err := tls.X509KeyPair(data[KeyCert], data[KeyKey])
	if err != nil {
		return nil, fmt.Errorf("%s, %s: %w", KeyCert, KeyKey, err)
	}
	leaf, err := x509.ParseCertificate(pair.Certificate[0])
	if err != nil {
		return nil, fmt.Errorf("%s: %w", KeyCert, err)
	}
	signer, ok := pair.PrivateKey.(crypto.Signer)
	if !ok {
		return nil, fmt.Errorf("%s: not a signing key", KeyKey)
	}
	b.serving = keyPair{cert: leaf, key: signer, certPEM: data[KeyCert], keyPEM: data[KeyKey]}
	if b.signer() == nil {
		return nil, fmt.Errorf("%s is signed by none of the CAs in %s", KeyCert, KeyCABundle)
	}
	if s := annotations[RolloverAnnotation]; s != "" {
		t, err := time.Parse(time.RFC3339Nano, s)
		if err != nil {
			return nil, fmt.Errorf("annotation %s: %w", RolloverAnnotation, err)
		}
		b.RolloverAt = t
	}
	return b, nil
}

func parseKey(p []byte) (crypto.Signer, error) {
	block, _ := pem.Decode(p)
	if block == nil {
		return nil, errors.New("no PEM key")
	}
	var key any
	var err error
	switch block.Type {
	case "EC PRIVATE KEY":
		key, err = x509.ParseECPrivateKey(block.Bytes)
	case "RSA PRIVATE KEY":
		key, err = x509.ParsePKCS1PrivateKey(block.Bytes)
	default:
		key, err = x509.ParsePKCS8PrivateKey(block.Bytes)
	}
	if err != nil {
		return nil, err
	}
	signer, ok := key.(crypto.Signer)
	if !ok {
		return nil, errors.New("not a signing key")
	}
	return signer, nil
}

func samePublicKey(a, b crypto.PublicKey) bool {
	type equaler interface{ Equal(crypto.PublicKey) bool }
	e, ok := a.(equaler)
	return ok && e.Equal(b)
}

// signer returns the CA of the bundle that signed the serving certificate.
func (b *Bundle) signer() *x509.Certificate {
	for _, ca := range b.CAs {
		if b.serving.cert.CheckSignatureFrom(ca) == nil {
			return ca
		}
	}
	return nil
}

func pemOf(cert *x509.Certificate) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: cert.Raw})
}

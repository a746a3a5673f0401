// Package stamp issues and verifies the guard's record of who made an
// admitted change to a managed object (the driftguard.io/changed-by
// annotation). Anyone who can write the object can write the annotation, so
// a stamp carries a MAC over its content and the object it belongs to, made
// with a key only the guard holds: the drift watcher believes a stamp only
// when the MAC verifies, and otherwise attributes the change to "unknown".
package stamp

import (
	"crypto/hmac"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"sync"

	"github.com/driftguard/driftguard/api/v1alpha1"
)

// Signer issues and verifies stamps with the key Key returns. A key that
// changes (the serving certificate the key comes from was rotated) keeps the
// previous one for verifying, so stamps issued just before a rotation stay
// believed.
type Signer struct {
	key func() ([]byte, error)

	mu            sync.Mutex
	current, prev []byte
}

// NewSigner returns a Signer over a key source.
func NewSigner(key func() ([]byte, error)) *Signer { return &Signer{key: key} }

// KeyFromCertificate derives a stamp key from the webhook's serving key, which
// every replica of the guard shares (the certificate Secret) and no one else
// holds.
//
// The key is derived once per serving certificate (the source hands out the
// same *tls.Certificate until it rotates), not on every stamp issued or
// verified.
func KeyFromCertificate(get func(*tls.ClientHelloInfo) (*tls.Certificate, error)) func() ([]byte, error) {
	var (
		mu   sync.Mutex
		last *tls.Certificate
		key  []byte
	)
	return func() ([]byte, error) {
		cert, err := get(nil)
		if err != nil {
			return nil, fmt.Errorf("stamp key: %w", err)
		}
		if cert == nil || cert.PrivateKey == nil {
			return nil, errors.New("stamp key: the serving certificate has no private key")
		}
		mu.Lock()
		defer mu.Unlock()
		if cert == last {
			return key, nil
		}
		der, err := x509.MarshalPKCS8PrivateKey(cert.PrivateKey)
		if err != nil {
			return nil, fmt.Errorf("stamp key: %w", err)
		}
		mac := hmac.New(sha256.New, der)
		mac.Write([]byte("driftguard.io/changed-by v1"))
		last, key = cert, mac.Sum(nil)
		return key, nil
	}
}

func (s *Signer) keys() (current, prev []byte, err error) {
	k, err := s.key()
	if err != nil {
		return nil, nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if !hmac.Equal(k, s.current) {
		s.prev, s.current = s.current, k
	}
	return s.current, s.prev, nil
}

// Issue returns the annotation value for c on the object named object (a
// stable name of the object: group, kind, namespace and name).
func (s *Signer) Issue(c v1alpha1.ChangedBy, object string) (string, error) {
	key, _, err := s.keys()
	if err != nil {
		return "", err
	}
	c.MAC = ""
	c.MAC = sign(key, c, object)
	return c.String(), nil
}

// Verify parses an annotation value and reports whether the guard issued it
// for object. A stamp someone wrote by hand, copied from another object or
// altered is not verified.
func (s *Signer) Verify(value, object string) (v1alpha1.ChangedBy, bool) {
	c, ok := v1alpha1.ParseChangedBy(value)
	if !ok || c.MAC == "" {
		return v1alpha1.ChangedBy{}, false
	}
	current, prev, err := s.keys()
	if err != nil {
		return v1alpha1.ChangedBy{}, false
	}
	for _, key := range [][]byte{current, prev} {
		if key != nil && hmac.Equal([]byte(sign(key, c, object)), []byte(c.MAC)) {
			return c, true
		}
	}
	return v1alpha1.ChangedBy{}, false
}

// sign is the MAC of the stamp's content (without its MAC) and the object.
func sign(key []byte, c v1alpha1.ChangedBy, object string) string {
	c.MAC = ""
	body, _ := json.Marshal(struct {
		Stamp  v1alpha1.ChangedBy `json:"stamp"`
		Object string             `json:"object"`
	}{c, object})
	mac := hmac.New(sha256.New, key)
	mac.Write(body)
	return base64.RawURLEncoding.EncodeToString(mac.Sum(nil))
}

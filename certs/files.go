package certs

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
)

// Files serves tls.crt and tls.key from a folder (a mounted Secret, which the
// kubelet updates in place), with ca.crt as the bundle to trust, and reloads
// them when they change.
type Files struct {
	Dir string
	// OnCABundle, when set, is called when ca.crt changed.
	OnCABundle func()
	Log        logr.Logger

	current atomic.Pointer[served]
	raw     [3][]byte
}

// Load reads the files; errors name the folder and the file.
func (f *Files) Load() error {
	var raw [3][]byte
	for i, name := range []string{KeyCert, KeyKey, KeyCABundle} {
		b, err := os.ReadFile(filepath.Join(f.Dir, name))
		if err != nil {
			return fmt.Errorf("--cert-dir %s: %w", f.Dir, err)
		}
		raw[i] = b
	}
	if bytes.Equal(raw[0], f.raw[0]) && bytes.Equal(raw[1], f.raw[1]) && bytes.Equal(raw[2], f.raw[2]) {
		return nil
	}
	pair, err := tls.X509KeyPair(raw[0], raw[1])
	if err != nil {
		return fmt.Errorf("--cert-dir %s: %s, %s: %w", f.Dir, KeyCert, KeyKey, err)
	}
	prev := f.current.Load()
	f.current.Store(&served{cert: &pair, ca: raw[2]})
	f.raw = raw
	if prev != nil {
		f.Log.Info("webhook certificate reloaded", "dir", f.Dir)
		if !bytes.Equal(prev.ca, raw[2]) && f.OnCABundle != nil {
			f.OnCABundle()
		}
	}
	return nil
}

// GetCertificate serves the newest certificate.
func (f *Files) GetCertificate(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	if s := f.current.Load(); s != nil {
		return s.cert, nil
	}
	return nil, errors.New("no serving certificate loaded yet")
}

// CABundle is the content of ca.crt.
func (f *Files) CABundle() []byte {
	if s := f.current.Load(); s != nil {
		return s.ca
	}
	return nil
}

// Start reloads the files every 10 seconds until ctx ends.
func (f *Files) Start(ctx context.Context) error {
	tick := time.NewTicker(10 * time.Second)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
			if err := f.Load(); err != nil {
				f.Log.Error(err, "webhook certificate not reloaded; serving the last good one")
			}
		}
	}
}

// NeedLeaderElection is false: every replica serves.
func (f *Files) NeedLeaderElection() bool { return false }

// Static serves one certificate for the life of the process.
type Static struct {
	Cert tls.Certificate
	CA   []byte
}

// staticLifetime is how long the CA and the certificate of NewStatic are
// valid: longer than a process is expected to run without a restart.
const staticLifetime = 365 * 24 * time.Hour

// NewStatic makes a CA and a serving certificate it signed for hosts (DNS
// names or IP addresses), both valid for a year, kept in memory only: for a
// guard with neither --cert-secret nor --cert-dir, and for tests.
func NewStatic(hosts []string) (*Static, error) {
	b, err := Policy{Hosts: hosts, CALifetime: staticLifetime, CertLifetime: staticLifetime}.Fresh(time.Now())
	if err != nil {
		return nil, err
	}
	cert, err := b.TLS()
	if err != nil {
		return nil, err
	}
	return &Static{Cert: *cert, CA: b.CAPEM()}, nil
}

// GetCertificate serves the certificate.
func (s *Static) GetCertificate(*tls.ClientHelloInfo) (*tls.Certificate, error) { return &s.Cert, nil }

// CABundle is the CA that signed it.
func (s *Static) CABundle() []byte { return s.CA }

package certs

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"maps"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"

	"github.com/driftguard/driftguard/uninstall"
)

// Rotator keeps the CA and serving certificate in a Secret current and serves
// the newest. Every replica runs one: the first to find the Secret missing
// creates it (the others' Create fails and they read it), and whoever first
// finds a certificate due renews it with an update that fails for the others
// (resource version), who then read the result. Each replica watches the
// Secret and serves what it holds from the next TLS handshake on.
type Rotator struct {
	Kube            kubernetes.Interface
	Namespace, Name string
	Policy          Policy
	// Trusted, when set, reports whether the webhook configurations trust
	// ca (a CA rollover waits for it before a certificate of ca is served).
	Trusted func(ctx context.Context, ca *x509.Certificate) bool
	// OnCABundle, when set, is called when the CA bundle changed.
	OnCABundle func()
	// Uninstalling, when set, is asked UninstallGrace after the Secret was
	// deleted under a running guard: true (helm uninstall) leaves it deleted.
	Uninstalling   func(ctx context.Context) bool
	UninstallGrace time.Duration
	Log            logr.Logger
	// Now is the clock; time.Now when nil.
	Now func() time.Time

	current         atomic.Pointer[served]
	kick            chan struct{}
	uninstallLogged bool
}

type served struct {
	bundle *Bundle
	cert   *tls.Certificate
	ca     []byte
	rv     string
}

func (r *Rotator) now() time.Time {
	if r.Now != nil {
		return r.Now()
	}
	return time.Now()
}

// GetCertificate serves the newest certificate (tls.Config.GetCertificate).
func (r *Rotator) GetCertificate(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	s := r.current.Load()
	if s == nil {
		return nil, errors.New("no serving certificate loaded yet")
	}
	return s.cert, nil
}

// CABundle is the PEM bundle of the CAs to trust, newest first.
func (r *Rotator) CABundle() []byte {
	if s := r.current.Load(); s != nil {
		return s.ca
	}
	return nil
}

// Ensure makes the Secret hold certificates that need nothing now, loads
// them, and returns when to look again. Call it once before serving.
func (r *Rotator) Ensure(ctx context.Context) (time.Time, error) {
	if err := r.Policy.Validate(); err != nil {
		return time.Time{}, fmt.Errorf("certificates: %w", err)
	}
	secrets := r.Kube.CoreV1().Secrets(r.Namespace)
	var lastErr error
	for range 10 {
		now := r.now()
		s, err := secrets.Get(ctx, r.Name, metav1.GetOptions{})
		if (apierrors.IsNotFound(err) || apierrors.IsForbidden(err)) && r.current.Load() != nil && uninstall.After(ctx, r.UninstallGrace, r.Uninstalling) {
			if !r.uninstallLogged {
				r.Log.Info("certificate secret deleted while the guard's Deployment is gone (uninstall): not created again", "secret", r.Namespace+"/"+r.Name)
				r.uninstallLogged = true
			}
			return r.now().Add(30 * time.Second), nil
		}
		if apierrors.IsNotFound(err) {
			// Deleted: put back what this replica serves, so that the CA
			// the webhook configurations trust stays; new ones otherwise.
			var b *Bundle
			if cur := r.current.Load(); cur != nil {
				b = cur.bundle
			} else if b, err = r.Policy.Fresh(now); err != nil {
				return time.Time{}, err
			}
			s, err = r.secretOf(nil, b)
			if err != nil {
				return time.Time{}, err
			}
			created, err := secrets.Create(ctx, s, metav1.CreateOptions{FieldManager: fieldManager})
			if apierrors.IsAlreadyExists(err) {
				continue // another replica created it first: read theirs
			}
			if err != nil {
				return time.Time{}, fmt.Errorf("create secret %s/%s: %w", r.Namespace, r.Name, err)
			}
			r.Log.Info("created the certificate secret", "secret", r.Namespace+"/"+r.Name,
				"caExpires", b.CAs[0].NotAfter, "certExpires", b.Cert().NotAfter)
			r.load(b, created.ResourceVersion)
			_, _, wake, err := r.Policy.Next(b, now, nil)
			return wake, err
		}
		if err != nil {
			return time.Time{}, fmt.Errorf("read secret %s/%s: %w", r.Namespace, r.Name, err)
		}
		b, perr := Parse(s.Data, s.Annotations)
		if perr != nil {
			r.Log.Info("the certificate secret does not hold a usable CA and certificate; making new ones", "secret", r.Namespace+"/"+r.Name, "error", perr.Error())
			b = nil
		}
		trusted := func(ca *x509.Certificate) bool { return r.Trusted == nil || r.Trusted(ctx, ca) }
		next, why, wake, err := r.Policy.Next(b, now, trusted)
		if err != nil {
			return time.Time{}, err
		}
		if next == nil {
			r.load(b, s.ResourceVersion)
			return wake, nil
		}
		upd, err := r.secretOf(s, next)
		if err != nil {
			return time.Time{}, err
		}
		updated, err := secrets.Update(ctx, upd, metav1.UpdateOptions{FieldManager: fieldManager})
		if apierrors.IsConflict(err) {
			lastErr = err
			continue // another replica rotated first: read theirs
		}
		if err != nil {
			return time.Time{}, fmt.Errorf("update secret %s/%s: %w", r.Namespace, r.Name, err)
		}
		r.Log.Info("certificates rotated", "why", why, "secret", r.Namespace+"/"+r.Name, "cas", len(next.CAs),
			"certExpires", next.Cert().NotAfter)
		r.load(next, updated.ResourceVersion)
		return wake, nil
	}
	return time.Time{}, fmt.Errorf("secret %s/%s: gave up after 10 conflicting writes: %w", r.Namespace, r.Name, lastErr)
}

const fieldManager = "driftguard"

// secretOf returns the Secret holding b, based on old when there is one.
func (r *Rotator) secretOf(old *corev1.Secret, b *Bundle) (*corev1.Secret, error) {
	data, err := b.Data()
	if err != nil {
		return nil, err
	}
	s := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: r.Name, Namespace: r.Namespace,
			Labels: map[string]string{"app.kubernetes.io/managed-by": "driftguard"}},
		Type: corev1.SecretTypeTLS,
	}
	if old != nil {
		s = old.DeepCopy()
		if s.Type == "" {
			s.Type = corev1.SecretTypeTLS
		}
	}
	s.Data = data
	if s.Annotations == nil {
		s.Annotations = map[string]string{}
	}
	delete(s.Annotations, RolloverAnnotation)
	maps.Copy(s.Annotations, b.Annotations())
	return s, nil
}

// load serves b from the next handshake on.
func (r *Rotator) load(b *Bundle, rv string) {
	prev := r.current.Load()
	if prev != nil && prev.rv == rv && rv != "" {
		return
	}
	cert, err := b.TLS()
	if err != nil {
		r.Log.Error(err, "certificate secret not loaded")
		return
	}
	s := &served{bundle: b, cert: cert, ca: b.CAPEM(), rv: rv}
	r.current.Store(s)
	if prev != nil && !bytes.Equal(prev.ca, s.ca) && r.OnCABundle != nil {
		r.OnCABundle()
	}
}

// Start keeps the certificates current until ctx ends: it watches the
// Secret (a replica's renewal reaches the others at once), and wakes when a
// renewal is due. It implements manager.Runnable; every replica runs it.
func (r *Rotator) Start(ctx context.Context) error {
	r.kick = make(chan struct{}, 1)
	factory := informers.NewSharedInformerFactoryWithOptions(r.Kube, 0, informers.WithNamespace(r.Namespace),
		informers.WithTweakListOptions(func(o *metav1.ListOptions) {
			o.FieldSelector = fields.OneTermEqualSelector("metadata.name", r.Name).String()
		}))
	inf := factory.Core().V1().Secrets().Informer()
	seen := func(obj any) {
		if s, ok := obj.(*corev1.Secret); ok {
			if b, err := Parse(s.Data, s.Annotations); err == nil {
				r.load(b, s.ResourceVersion)
			}
		}
		select {
		case r.kick <- struct{}{}:
		default:
		}
	}
	if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    seen,
		UpdateFunc: func(_, n any) { seen(n) },
		DeleteFunc: seen,
	}); err != nil {
		return err
	}
	factory.Start(ctx.Done())
	defer factory.Shutdown()

	wake := r.now()
	for {
		timer := time.NewTimer(max(time.Until(wake), 0))
		select {
		case <-ctx.Done():
			timer.Stop()
			return nil
		case <-timer.C:
		case <-r.kick:
			timer.Stop()
		}
		next, err := r.Ensure(ctx)
		if err != nil {
			r.Log.Error(err, "certificate rotation failed; retrying in 5s")
			next = r.now().Add(5 * time.Second)
		}
		wake = next
	}
}

// NeedLeaderElection is false: every replica serves, so every replica loads.
func (r *Rotator) NeedLeaderElection() bool { return false }

package app

import (
	"context"
	"crypto/tls"
	"crypto/x509"

	"github.com/go-logr/logr"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/driftguard/driftguard/certs"
	"github.com/driftguard/driftguard/protect"
)

// servingCerts is where the webhook server's certificate and the CA bundle
// registered with it come from.
type servingCerts interface {
	GetCertificate(hello *tls.ClientHelloInfo) (*tls.Certificate, error)
	CABundle() []byte
}

// certificates sets up the webhook's certificates: --cert-secret (created,
// shared and rotated by the guard), --cert-dir (files, reloaded), or a pair
// generated in memory at start-up. The runnable keeps them current; the CA
// bundle's changes are told to caChanged (the registrar's).
func certificates(ctx context.Context, kube kubernetes.Interface, o Options, caChanged func(), log logr.Logger) (servingCerts, manager.Runnable, error) {
	switch {
	case o.CertSecret != "":
		r := &certs.Rotator{
			Kube: kube, Namespace: o.Namespace, Name: o.CertSecret,
			Policy:     certs.Policy{Hosts: webhookHosts(o), CALifetime: o.CALifetime, CertLifetime: o.CertLifetime},
			OnCABundle: caChanged, Log: log,
		}
		if o.WebhookRegister {
			r.Trusted = func(ctx context.Context, ca *x509.Certificate) bool {
				return certs.WebhooksTrust(ctx, kube, o.WebhookConfigName, ca)
			}
		}
		if o.DeploymentName != "" {
			r.Uninstalling = func(ctx context.Context) bool {
				return protect.DeploymentGone(ctx, kube, o.Namespace, o.DeploymentName)
			}
		}
		if _, err := r.Ensure(ctx); err != nil {
			return nil, nil, err
		}
		return r, r, nil
	case o.CertDir != "":
		f := &certs.Files{Dir: o.CertDir, OnCABundle: caChanged, Log: log}
		if err := f.Load(); err != nil {
			return nil, nil, err
		}
		return f, f, nil
	default:
		c, err := certs.NewStatic(webhookHosts(o))
		if err != nil {
			return nil, nil, err
		}
		return c, nil, nil
	}
}

package app

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"

	"github.com/go-logr/logr"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/driftguard/driftguard/certs"
	"github.com/driftguard/driftguard/webhook"
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
// bundle's changes reach the registrar.
func certificates(ctx context.Context, kube kubernetes.Interface, reg *webhook.Registrar, o Options, log logr.Logger) (servingCerts, manager.Runnable, error) {
	changed := func() {
		if reg != nil {
			reg.Changed()
		}
	}
	switch {
	case o.CertSecret != "":
		r := &certs.Rotator{
			Kube: kube, Namespace: o.Namespace, Name: o.CertSecret,
			Policy:     certs.Policy{Hosts: webhookHosts(o), CALifetime: o.CALifetime, CertLifetime: o.CertLifetime},
			OnCABundle: changed, Log: log,
		}
		if reg != nil {
			r.Trusted = func(ctx context.Context, ca *x509.Certificate) bool {
				return trusted(ctx, kube, o.WebhookConfigName, ca)
			}
		}
		if o.DeploymentName != "" {
			r.Uninstalling = func(ctx context.Context) bool { return deploymentGone(ctx, kube, o.Namespace, o.DeploymentName) }
		}
		if _, err := r.Ensure(ctx); err != nil {
			return nil, nil, err
		}
		return r, r, nil
	case o.CertDir != "":
		f := &certs.Files{Dir: o.CertDir, OnCABundle: changed, Log: log}
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

// trusted reports whether every webhook of both configurations trusts ca.
func trusted(ctx context.Context, kube kubernetes.Interface, name string, ca *x509.Certificate) bool {
	want := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: ca.Raw})
	adm := kube.AdmissionregistrationV1()
	v, err := adm.ValidatingWebhookConfigurations().Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return false
	}
	for _, w := range v.Webhooks {
		if !bytes.Contains(w.ClientConfig.CABundle, want) {
			return false
		}
	}
	m, err := adm.MutatingWebhookConfigurations().Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return false
	}
	for _, w := range m.Webhooks {
		if !bytes.Contains(w.ClientConfig.CABundle, want) {
			return false
		}
	}
	return true
}

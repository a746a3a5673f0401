package certs

import (
	"bytes"
	"context"
	"crypto/x509"
	"encoding/pem"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// WebhooksTrust reports whether every webhook of the validating and the
// mutating configuration called name trusts ca: a CA rollover waits for it
// before a certificate of ca is served (Rotator.Trusted). A configuration
// that cannot be read trusts nothing.
func WebhooksTrust(ctx context.Context, kube kubernetes.Interface, name string, ca *x509.Certificate) bool {
	adm := kube.AdmissionregistrationV1()
	v, err := adm.ValidatingWebhookConfigurations().Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return false
	}
	var validating [][]byte
	for _, w := range v.Webhooks {
		validating = append(validating, w.ClientConfig.CABundle)
	}
	if !bundlesTrust(validating, ca) {
		return false
	}
	m, err := adm.MutatingWebhookConfigurations().Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return false
	}
	var mutating [][]byte
	for _, w := range m.Webhooks {
		mutating = append(mutating, w.ClientConfig.CABundle)
	}
	return bundlesTrust(mutating, ca)
}

// bundlesTrust reports whether every CA bundle holds ca.
func bundlesTrust(bundles [][]byte, ca *x509.Certificate) bool {
	want := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: ca.Raw})
	for _, b := range bundles {
		if !bytes.Contains(b, want) {
			return false
		}
	}
	return true
}

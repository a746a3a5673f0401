// Package endpoint tests who may reach the guard's endpoints on a real
// kube-apiserver and etcd: the admission webhook behind the API server's
// client certificate (its admission configuration presents one, the guard
// requires it with --webhook-client-ca-file), and the metrics behind the
// API server's authentication and authorization (--metrics-secure).
package endpoint

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/driftguard/driftguard/app"
	"github.com/driftguard/driftguard/test/harness"
)

var (
	h *harness.Harness
	// webhookAddr is where the guard's webhook listens; metricsAddr its
	// metrics (HTTPS).
	webhookAddr, metricsAddr string
	// clientCA signed the API server's client certificate for webhooks;
	// clientCAKey signs more in tests.
	clientCA    *x509.Certificate
	clientCAKey *ecdsa.PrivateKey
)

// apiServerClientName is the common name of the API server's client
// certificate for webhooks.
const apiServerClientName = "kube-apiserver-webhook-client"

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	dir, err := os.MkdirTemp("", "driftguard-endpoint-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	ports := make([]int, 2)
	for i := range ports {
		if ports[i], err = harness.FreePort(); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
	}
	webhookAddr, metricsAddr = fmt.Sprintf("127.0.0.1:%d", ports[0]), fmt.Sprintf("127.0.0.1:%d", ports[1])
	admissionConfig, caFile, err := writeAdmissionConfig(dir, webhookAddr)
	if err != nil {
		fmt.Fprintln(os.Stderr, "admission configuration:", err)
		return 1
	}
	h, err = harness.Start(harness.Options{
		APIServerFlags: map[string]string{"admission-control-config-file": admissionConfig},
		Guard: func(o *app.Options) {
			o.WebhookAddr = webhookAddr
			o.WebhookClientCAFile = caFile
			o.WebhookClientNames = []string{apiServerClientName}
			o.MetricsAddr, o.MetricsSecure = metricsAddr, true
		},
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, "start harness:", err)
		return 1
	}
	defer h.Stop()
	return m.Run()
}

// writeAdmissionConfig writes what a cluster administrator puts on the
// control plane: a CA, the API server's client certificate for webhooks
// it signed, a kubeconfig naming the webhook's host:port with that
// certificate, and the admission configuration pointing both webhook
// admission plugins at it. It returns the configuration's path and the
// CA file the guard is given.
func writeAdmissionConfig(dir, webhookAddr string) (config, caFile string, err error) {
	if clientCA, clientCAKey, err = newCA("webhook-client-ca"); err != nil {
		return "", "", err
	}
	cert, err := newClientCert(clientCA, clientCAKey, apiServerClientName)
	if err != nil {
		return "", "", err
	}
	key, err := x509.MarshalPKCS8PrivateKey(cert.PrivateKey)
	if err != nil {
		return "", "", err
	}
	files := map[string][]byte{
		"ca.crt":     pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: clientCA.Raw}),
		"client.crt": pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: cert.Certificate[0]}),
		"client.key": pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: key}),
		"webhook.kubeconfig": fmt.Appendf(nil, `apiVersion: v1
kind: Config
users:
- name: %q
  user:
    client-certificate: %s
    client-key: %s
`, webhookAddr, filepath.Join(dir, "client.crt"), filepath.Join(dir, "client.key")),
		"admission.yaml": fmt.Appendf(nil, `apiVersion: apiserver.config.k8s.io/v1
kind: AdmissionConfiguration
plugins:
- name: ValidatingAdmissionWebhook
  configuration:
    apiVersion: apiserver.config.k8s.io/v1
    kind: WebhookAdmissionConfiguration
    kubeConfigFile: %[1]s
- name: MutatingAdmissionWebhook
  configuration:
    apiVersion: apiserver.config.k8s.io/v1
    kind: WebhookAdmissionConfiguration
    kubeConfigFile: %[1]s
`, filepath.Join(dir, "webhook.kubeconfig")),
	}
	for name, b := range files {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o600); err != nil {
			return "", "", err
		}
	}
	return filepath.Join(dir, "admission.yaml"), filepath.Join(dir, "ca.crt"), nil
}

func newCA(name string) (*x509.Certificate, *ecdsa.PrivateKey, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	tmpl := &x509.Certificate{SerialNumber: serial(), Subject: pkix.Name{CommonName: name}, NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		KeyUsage: x509.KeyUsageCertSign, BasicConstraintsValid: true, IsCA: true}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, nil, err
	}
	cert, err := x509.ParseCertificate(der)
	return cert, key, err
}

func newClientCert(ca *x509.Certificate, caKey *ecdsa.PrivateKey, name string) (*tls.Certificate, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	tmpl := &x509.Certificate{SerialNumber: serial(), Subject: pkix.Name{CommonName: name}, NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		return nil, err
	}
	return &tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}, nil
}

func serial() *big.Int {
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
	if err != nil {
		panic(err) // crypto/rand does not fail
	}
	return n
}

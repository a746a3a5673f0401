package endpoint

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// TestMetricsNeedAuthorizedToken: with --metrics-secure the metrics are
// served over HTTPS, with the webhook's serving certificate, only to a
// bearer token the API server authenticates whose identity may get
// /metrics; plain HTTP is not served at all.
func TestMetricsNeedAuthorizedToken(t *testing.T) {
	ctx := context.Background()
	kube, err := kubernetes.NewForConfig(h.Cluster.Config)
	if err != nil {
		t.Fatal(err)
	}
	const ns = "monitoring"
	for _, o := range []client.Object{
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}},
		&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "prometheus", Namespace: ns}},
		&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "nosy", Namespace: ns}},
		&rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "driftguard-metrics-reader"},
			Rules: []rbacv1.PolicyRule{{NonResourceURLs: []string{"/metrics"}, Verbs: []string{"get"}}}},
		&rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "prometheus-driftguard-metrics"},
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "driftguard-metrics-reader"},
			Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: "prometheus", Namespace: ns}}},
	} {
		if err := h.Admin.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	token := func(sa string) string {
		tr, err := kube.CoreV1().ServiceAccounts(ns).CreateToken(ctx, sa, &authenticationv1.TokenRequest{}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return tr.Status.Token
	}

	// The metrics are served with the webhook's certificate.
	var vwc admissionregistrationv1.ValidatingWebhookConfiguration
	if err := h.Admin.Get(ctx, client.ObjectKey{Name: h.WebhookConfigName}, &vwc); err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(vwc.Webhooks[0].ClientConfig.CABundle) {
		t.Fatal("no CA bundle in the webhook configuration")
	}
	// As Prometheus does: HTTP/1.1.
	c := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: roots, ServerName: "127.0.0.1", NextProtos: []string{"http/1.1"}}}, Timeout: 30 * time.Second}
	get := func(bearer string) (int, string) {
		t.Helper()
		req, err := http.NewRequest(http.MethodGet, "https://"+metricsAddr+"/metrics", nil)
		if err != nil {
			t.Fatal(err)
		}
		if bearer != "" {
			req.Header.Set("Authorization", "Bearer "+bearer)
		}
		resp, err := c.Do(req)
		if err != nil {
			t.Fatalf("metrics over HTTPS: %v", err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	for _, tc := range []struct {
		name, token string
		want        int
	}{
		{"no token", "", http.StatusUnauthorized},
		{"a token the API server does not know", "not-a-token", http.StatusUnauthorized},
		{"a service account without the role", token("nosy"), http.StatusForbidden},
		{"the scraper's service account", token("prometheus"), http.StatusOK},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, body := get(tc.token)
			if code != tc.want {
				t.Fatalf("status %d, want %d: %.200s", code, tc.want, body)
			}
			if code == http.StatusOK && !strings.Contains(body, "driftguard_") {
				t.Fatalf("no driftguard metric served: %.300s", body)
			}
			if code != http.StatusOK && strings.Contains(body, "driftguard_") {
				t.Fatalf("metrics served with status %d", code)
			}
		})
	}
	if resp, err := http.Get("http://" + metricsAddr + "/metrics"); err == nil {
		defer resp.Body.Close()
		if b, _ := io.ReadAll(resp.Body); strings.Contains(string(b), "driftguard_") {
			t.Fatal("metrics served over plain HTTP")
		}
	}
}

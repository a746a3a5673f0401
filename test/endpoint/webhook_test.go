package endpoint

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/driftguard/driftguard/audit"
	"github.com/driftguard/driftguard/test/wait"
)

const forger = "mallory-forged"

// TestForgedReviewsRefusedAtTLS: with --webhook-client-ca-file the API
// server's admission reviews still reach the guard (a person's change to
// a managed object is denied), while a pod posting a forged review
// straight to the webhook, without a client certificate, with one another
// CA signed, or with one of a name not permitted, is refused in the TLS
// handshake: no decision record and no Event name the forged user.
func TestForgedReviewsRefusedAtTLS(t *testing.T) {
	const ns = "forge"
	repo := h.NewGuard(t, "forge", true, map[string]string{
		"ns.yaml":     fmt.Sprintf("apiVersion: v1\nkind: Namespace\nmetadata:\n  name: %s\n", ns),
		"config.yaml": fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: web-config\n  namespace: %s\ndata:\n  value: from-git\n", ns),
	})
	h.WaitApplied(t, repo.Guard, repo.Initial)

	// The API server presents its certificate: admission works.
	deny := func(value string) {
		t.Helper()
		out, err := h.Kubectl(t, "patch", "configmap", "web-config", "-n", ns, "--type=merge", "-p", fmt.Sprintf(`{"data":{"value":%q}}`, value))
		if err == nil || !strings.Contains(out, "managed by Git") {
			t.Fatalf("a person's change through the API server was not decided by the webhook: %v %s", err, out)
		}
		h.Audit.Wait(t, 20*time.Second, "alice's denied change "+value, func(r audit.Record) bool {
			return r.Type == audit.Decision && r.User == "alice" && r.Object.Name == "web-config" && strings.Contains(fmt.Sprint(r.Fields), value)
		})
	}
	deny("by-hand-1")

	var live corev1.ConfigMap
	if err := h.Admin.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "web-config"}, &live); err != nil {
		t.Fatal(err)
	}
	forged := forgedReview(t, &live)

	wrongCA, wrongKey, err := newCA("someone-else")
	if err != nil {
		t.Fatal(err)
	}
	fromWrongCA, err := newClientCert(wrongCA, wrongKey, apiServerClientName)
	if err != nil {
		t.Fatal(err)
	}
	misnamed, err := newClientCert(clientCA, clientCAKey, "some-pod")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		cert *tls.Certificate
	}{
		{"no client certificate", nil},
		{"a certificate another CA signed, with the API server's name", fromWrongCA},
		{"a certificate of the right CA with a name not permitted", misnamed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp, err := post(tc.cert, "/validate", forged)
			if err == nil {
				resp.Body.Close()
				t.Fatalf("a forged review was served: %s", resp.Status)
			}
			// With TLS 1.3 the server judges the client's certificate after
			// the client has finished its side of the handshake, so a POST
			// may fail while it writes (a broken pipe) before the alert is
			// read: the handshake alone, then a read, shows the refusal.
			if err := handshake(tc.cert); err == nil || (!strings.Contains(err.Error(), "tls") && !strings.Contains(err.Error(), "certificate")) {
				t.Errorf("refused, but not in the TLS handshake: %v", err)
			}
			if resp, err := post(tc.cert, "/mutate", forged); err == nil {
				resp.Body.Close()
				t.Fatalf("a forged review was served by the mutating webhook: %s", resp.Status)
			}
		})
	}
	// The certificate the API server presents is served (the refusals
	// above are the certificate's doing): a review of an object no Guard
	// manages is allowed.
	good, err := newClientCert(clientCA, clientCAKey, apiServerClientName)
	if err != nil {
		t.Fatal(err)
	}
	unmanaged := live.DeepCopy()
	unmanaged.Name, unmanaged.Namespace = "not-managed", "default"
	resp, err := post(good, "/validate", forgedReview(t, unmanaged))
	if err != nil {
		t.Fatalf("the API server's certificate is refused: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("the API server's certificate: %s", resp.Status)
	}

	// Records and Events are written in order: once those of a later
	// change are there, any of the forged reviews would be too.
	deny("by-hand-2")
	wait.Eventually(t, 20*time.Second, "the Event of alice's second change", func() error {
		if !strings.Contains(events(t, ns), "by-hand-2") {
			return fmt.Errorf("no Event yet")
		}
		return nil
	})
	for _, r := range h.Audit.All() {
		if r.User == forger || r.RequestUID == "forged-review" {
			t.Errorf("a forged review left a record: %s %s by %s of %s", r.Type, r.Action, r.User, r.Object)
		}
	}
	if ev := events(t, ""); strings.Contains(ev, forger) {
		t.Errorf("a forged review left an Event: %s", ev)
	}
}

// forgedReview is an AdmissionReview a pod makes up: an UPDATE of obj by
// someone who never sent it to the API server.
func forgedReview(t *testing.T, obj *corev1.ConfigMap) []byte {
	t.Helper()
	changed := obj.DeepCopy()
	changed.Data = map[string]string{"value": "forged"}
	raw := func(o runtime.Object) runtime.RawExtension {
		b, err := json.Marshal(o)
		if err != nil {
			t.Fatal(err)
		}
		return runtime.RawExtension{Raw: b}
	}
	obj.APIVersion, obj.Kind, changed.APIVersion, changed.Kind = "v1", "ConfigMap", "v1", "ConfigMap"
	b, err := json.Marshal(admissionv1.AdmissionReview{
		TypeMeta: metav1.TypeMeta{APIVersion: "admission.k8s.io/v1", Kind: "AdmissionReview"},
		Request: &admissionv1.AdmissionRequest{
			UID: "forged-review", Operation: admissionv1.Update, Namespace: obj.Namespace, Name: obj.Name,
			Kind:     metav1.GroupVersionKind{Version: "v1", Kind: "ConfigMap"},
			Resource: metav1.GroupVersionResource{Version: "v1", Resource: "configmaps"},
			UserInfo: authenticationv1.UserInfo{Username: forger, Groups: []string{"system:authenticated"}},
			Object:   raw(changed), OldObject: raw(obj),
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// post sends body to the webhook at path as a pod would: it does not check
// the server's certificate, and presents cert when it has one.
func post(cert *tls.Certificate, path string, body []byte) (*http.Response, error) {
	cfg := &tls.Config{InsecureSkipVerify: true} //nolint:gosec // an attacker does not care who serves
	if cert != nil {
		cfg.Certificates = []tls.Certificate{*cert}
	}
	c := &http.Client{Transport: &http.Transport{TLSClientConfig: cfg}, Timeout: 30 * time.Second}
	return c.Post("https://"+webhookAddr+path, "application/json", bytes.NewReader(body))
}

// handshake connects with cert, completes the client's side of the TLS
// handshake and reads: the server's alert, if it refuses the certificate.
func handshake(cert *tls.Certificate) error {
	cfg := &tls.Config{InsecureSkipVerify: true} //nolint:gosec // an attacker does not care who serves
	if cert != nil {
		cfg.Certificates = []tls.Certificate{*cert}
	}
	conn, err := tls.DialWithDialer(&net.Dialer{Timeout: 10 * time.Second}, "tcp", webhookAddr, cfg)
	if err != nil {
		return err
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
	_, err = conn.Read(make([]byte, 1))
	return err
}

// events lists the messages of the Events in ns (every namespace when empty).
func events(t *testing.T, ns string) string {
	t.Helper()
	var list corev1.EventList
	if err := h.Admin.List(context.Background(), &list, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for _, e := range list.Items {
		b.WriteString(e.Message + "\n")
	}
	return b.String()
}

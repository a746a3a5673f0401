package promrules

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/driftguard/driftguard/api/v1alpha1"
	"github.com/driftguard/driftguard/audit"
	"github.com/driftguard/driftguard/decision"
	"github.com/driftguard/driftguard/test/wait"
)

func namespace(name string) string {
	return fmt.Sprintf("apiVersion: v1\nkind: Namespace\nmetadata:\n  name: %s\n", name)
}

func configMap(ns, name, value string, annotations ...string) string {
	ann := ""
	if len(annotations) == 2 {
		ann = fmt.Sprintf("  annotations:\n    %s: %q\n", annotations[0], annotations[1])
	}
	return fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: %s\n  namespace: %s\n%sdata:\n  value: %q\n", name, ns, ann, value)
}

func patch(value string) []string {
	return []string{"--type=merge", "-p", fmt.Sprintf(`{"data":{"value":%q}}`, value)}
}

// scenario makes what the alerts and dashboards are about: a Guard whose
// sync keeps failing, a stalled one, denials, drift that is reverted,
// drift that is accepted and stays, a fight with a controller, malformed
// and oversized admission reviews; the audit file sink is on a full disk
// (main_test.go) the whole time.
func scenario(t *testing.T) {
	badReviews := sendBadReviews(t)
	t.Cleanup(badReviews)

	// A Service the API server refuses (port out of range): every sync
	// fails, retried every second.
	h.NewGuard(t, "obs-failing", true, map[string]string{
		"ns.yaml":  namespace("obs-failing"),
		"svc.yaml": "apiVersion: v1\nkind: Service\nmetadata:\n  name: bad\n  namespace: obs-failing\nspec:\n  ports:\n  - port: 99999\n",
	}, func(s *v1alpha1.GuardSpec) {
		s.Retry = &v1alpha1.RetryPolicy{Backoff: &v1alpha1.Backoff{Duration: &metav1.Duration{Duration: time.Second}, Factor: 1}}
	})
	// A revision that does not render: Stalled.
	h.NewGuard(t, "obs-stalled", true, map[string]string{"bad.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: [unclosed\n"})

	denied := h.NewGuard(t, "obs-denied", true, map[string]string{"ns.yaml": namespace("obs-denied"), "cm.yaml": configMap("obs-denied", "cm", "git")})
	drifting := h.NewGuard(t, "obs-drift", true, map[string]string{
		"ns.yaml":  namespace("obs-drift"),
		"cm.yaml":  configMap("obs-drift", "cm", "git"),
		"off.yaml": configMap("obs-drift", "off", "git", v1alpha1.EnforcementAnnotation, "off"),
		"cfg.yaml": configMap("obs-drift", "cfg", "git"),
	}, func(s *v1alpha1.GuardSpec) { s.Enforcement = v1alpha1.EnforcementDryRun })
	h.WaitApplied(t, denied.Guard, denied.Initial)
	h.WaitApplied(t, drifting.Guard, drifting.Initial)

	for i := range 3 {
		if out, err := h.Kubectl(t, append([]string{"patch", "configmap", "cm", "-n", "obs-denied"}, patch(fmt.Sprint("alice ", i))...)...); err == nil {
			t.Fatalf("alice's change of a managed object was admitted: %s", out)
		}
	}
	// Admitted under dryrun, then reverted.
	if out, err := h.Kubectl(t, append([]string{"patch", "configmap", "cm", "-n", "obs-drift"}, patch("by hand")...)...); err != nil {
		t.Fatalf("dryrun denied: %s", out)
	}
	h.Audit.Wait(t, 30*time.Second, "revert of obs-drift/cm", func(r audit.Record) bool {
		return r.Type == audit.Revert && r.Guard == drifting.Guard && r.Object.Name == "cm"
	})
	// Enforcement off: the change stays.
	if out, err := h.Kubectl(t, append([]string{"patch", "configmap", "off", "-n", "obs-drift"}, patch("by hand")...)...); err != nil {
		t.Fatalf("enforcement off denied: %s", out)
	}
	fight(t, drifting.Guard)
	waitCondition(t, "obs-failing", v1alpha1.ConditionReady, metav1.ConditionFalse)
	waitCondition(t, "obs-stalled", v1alpha1.ConditionStalled, metav1.ConditionTrue)
}

// fight: a controller (a service account of another namespace) puts its
// value back after every revert until the guard stops reverting.
func fight(t *testing.T, guard string) {
	const operator = "system:serviceaccount:operators:obs-operator"
	kc, _, err := h.Cluster.AddUser(operator, []string{"system:masters", "system:serviceaccounts"})
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 20; i++ {
		if out, err := h.KubectlAs(t, kc, "patch", "configmap", "cfg", "-n", "obs-drift", "--field-manager=obs-operator", "--type=merge", "-p", `{"data":{"value":"operator's"}}`); err != nil {
			t.Fatalf("%v %s", err, out)
		}
		if len(h.Audit.Find(func(r audit.Record) bool { return r.Guard == guard && r.Rule == decision.RuleFightDetected })) > 0 {
			return
		}
		wait.Eventually(t, 30*time.Second, "revert or fight", func() error {
			if len(h.Audit.Find(func(r audit.Record) bool { return r.Guard == guard && r.Rule == decision.RuleFightDetected })) > 0 {
				return nil
			}
			var cm corev1.ConfigMap
			if err := h.Admin.Get(context.Background(), client.ObjectKey{Namespace: "obs-drift", Name: "cfg"}, &cm); err != nil {
				return err
			}
			if cm.Data["value"] != "git" {
				return fmt.Errorf("cfg is %q", cm.Data["value"])
			}
			return nil
		})
	}
	t.Fatal("the guard kept fighting the controller")
}

func waitCondition(t *testing.T, guard, typ string, status metav1.ConditionStatus) {
	t.Helper()
	wait.Eventually(t, 60*time.Second, guard+" "+typ+"="+string(status), func() error {
		var g v1alpha1.Guard
		if err := h.Admin.Get(context.Background(), client.ObjectKey{Name: guard}, &g); err != nil {
			return err
		}
		c := meta.FindStatusCondition(g.Status.Conditions, typ)
		if c == nil || c.Status != status {
			return fmt.Errorf("conditions %+v", g.Status.Conditions)
		}
		return nil
	})
}

// sendBadReviews posts a malformed admission review to the validating
// webhook every 200 ms, and one whose declared length is above the limit,
// as a broken client would; the returned func stops it.
func sendBadReviews(t *testing.T) func() {
	t.Helper()
	var cfg admissionregistrationv1.ValidatingWebhookConfiguration
	if err := h.Admin.Get(context.Background(), client.ObjectKey{Name: h.WebhookConfigName}, &cfg); err != nil {
		t.Fatal(err)
	}
	if len(cfg.Webhooks) == 0 || cfg.Webhooks[0].ClientConfig.URL == nil {
		t.Fatalf("webhook configuration %s has no URL: %+v", h.WebhookConfigName, cfg.Webhooks)
	}
	url := *cfg.Webhooks[0].ClientConfig.URL
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(cfg.Webhooks[0].ClientConfig.CABundle) {
		t.Fatal("no CA in the webhook's caBundle")
	}
	c := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}}}
	post := func(body []byte) {
		req, err := http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
		if err != nil {
			return
		}
		req.Header.Set("Content-Type", "application/json")
		if resp, err := c.Do(req); err == nil {
			resp.Body.Close()
		}
	}
	// Above --webhook-max-request-bytes (7 MiB): refused unread.
	post(bytes.Repeat([]byte(" "), 8<<20))
	stop, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		tick := time.NewTicker(200 * time.Millisecond)
		defer tick.Stop()
		for {
			post([]byte(`{"kind":"AdmissionReview","request":`))
			select {
			case <-stop:
				return
			case <-tick.C:
			}
		}
	}()
	var once sync.Once
	return func() { once.Do(func() { close(stop); <-done }) }
}

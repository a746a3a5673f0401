package install

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"

	"github.com/driftguard/driftguard/audit"
	"github.com/driftguard/driftguard/test/wait"
)

// TestHAHandOver: two guard processes against one API server, behind one
// address as behind a Service. Both answer admission requests (the one that
// does not lead has the desired state too); only the leader applies and
// reverts. Killed, the leader hands reconciliation to the other within the
// lease duration, and drift made while no one led is reverted after the
// hand-over.
func TestHAHandOver(t *testing.T) {
	e := newEnv(t)
	files := map[string]string{
		"cluster.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cluster-settings\n  namespace: kube-system\ndata:\n  region: eu\n",
	}
	for k, v := range appsFiles {
		files[k] = v
	}
	e.guard("apps", files)
	front := startProxy(t)
	flags := []string{"--leader-elect", "--leader-elect-lease-duration=4s", "--leader-elect-renew-deadline=3s", "--leader-elect-retry-period=500ms",
		"--cert-secret=webhook-tls", "--webhook-url=https://" + front.addr(), "--failure-policy=Ignore"}
	a := e.startGuard("guard-a", flags...)
	wait.Eventually(t, 30*time.Second, "guard-a leads", func() error {
		if a.logCount("Successfully acquired lease") == 0 {
			return fmt.Errorf("not yet")
		}
		return nil
	})
	b := e.startGuard("guard-b", flags...)
	front.setBackends(a.webhookAddr, b.webhookAddr)
	e.waitValue(60*time.Second, "blue", "configmap", "settings", "-n", "apps", "-o", "jsonpath={.data.color}")
	wait.Eventually(t, 30*time.Second, "guard-b follows the Guard's source", func() error {
		if b.logCount("following a Guard's source") == 0 {
			return fmt.Errorf("not yet")
		}
		return nil
	})

	// Both replicas answer, with the Git file in the denial.
	for _, g := range []*guardProc{a, b} {
		wait.Eventually(t, 20*time.Second, g.name+" denies a change to Git's field", func() error {
			resp, err := reviewColor(e, g.webhookAddr, "red")
			if err != nil {
				return err
			}
			if resp.Allowed || !strings.Contains(resp.Result.Message, "cm.yaml") {
				return fmt.Errorf("%s answered allowed=%v %q", g.name, resp.Allowed, resp.Result.Message)
			}
			return nil
		})
	}
	// Only the leader reconciles.
	if applied := b.audit.Find(func(r audit.Record) bool { return r.Type == audit.Apply }); len(applied) > 0 {
		t.Fatalf("the replica that does not lead applied: %+v", applied[0])
	}
	if b.logContains("Successfully acquired lease") || b.logContains("watching kind") {
		t.Fatal("guard-b leads or watches for drift while guard-a leads")
	}

	// The leader dies: drift where the webhook never looks (kube-system)
	// waits for the next leader; the webhook keeps answering meanwhile.
	a.kill()
	if out, err := e.kubectl(e.aliceKC, "patch", "configmap", "cluster-settings", "-n", "kube-system", "-p", `{"data":{"region":"us"}}`); err != nil {
		t.Fatalf("%v %s", err, out)
	}
	e.waitDenied("guard-b answers through the front while no one leads")
	wait.Eventually(t, 30*time.Second, "guard-b takes over", func() error {
		if b.logCount("Successfully acquired lease") == 0 {
			return fmt.Errorf("not yet")
		}
		return nil
	})
	e.waitValue(30*time.Second, "eu", "configmap", "cluster-settings", "-n", "kube-system", "-o", "jsonpath={.data.region}")
	b.audit.Wait(t, 10*time.Second, "guard-b reverts the drift", func(r audit.Record) bool {
		return r.Type == audit.Revert && r.Object.Name == "cluster-settings"
	})
	// The new leader re-registered the webhook and keeps reconciling.
	e.waitDenied("the webhook still denies")
	if out, err := e.kubectl(e.aliceKC, "patch", "configmap", "cluster-settings", "-n", "kube-system", "-p", `{"data":{"region":"ap"}}`); err != nil {
		t.Fatalf("%v %s", err, out)
	}
	e.waitValue(30*time.Second, "eu", "configmap", "cluster-settings", "-n", "kube-system", "-o", "jsonpath={.data.region}")
}

// reviewColor sends one AdmissionReview straight to a replica: alice
// changing color of apps/settings.
func reviewColor(e *env, addr, color string) (*admissionv1.AdmissionResponse, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cm, err := e.kube.CoreV1().ConfigMaps("apps").Get(ctx, "settings", metav1.GetOptions{})
	if err != nil {
		return nil, err
	}
	cm.APIVersion, cm.Kind = "v1", "ConfigMap"
	old, err := json.Marshal(cm)
	if err != nil {
		return nil, err
	}
	cm.Data["color"] = color
	obj, err := json.Marshal(cm)
	if err != nil {
		return nil, err
	}
	review := admissionv1.AdmissionReview{
		TypeMeta: metav1.TypeMeta{APIVersion: "admission.k8s.io/v1", Kind: "AdmissionReview"},
		Request: &admissionv1.AdmissionRequest{
			UID: types.UID(fmt.Sprintf("test-%d", time.Now().UnixNano())), Operation: admissionv1.Update,
			Kind:     metav1.GroupVersionKind{Version: "v1", Kind: "ConfigMap"},
			Resource: metav1.GroupVersionResource{Version: "v1", Resource: "configmaps"},
			Name:     "settings", Namespace: "apps",
			UserInfo:  authenticationv1.UserInfo{Username: "alice", Groups: []string{"dev"}},
			Object:    runtime.RawExtension{Raw: obj},
			OldObject: runtime.RawExtension{Raw: old},
		},
	}
	body, err := json.Marshal(review)
	if err != nil {
		return nil, err
	}
	s, err := e.kube.CoreV1().Secrets(guardNS).Get(ctx, "webhook-tls", metav1.GetOptions{})
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(s.Data["ca.crt"])
	hc := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}}}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "https://"+addr+"/validate", bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := hc.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var out admissionv1.AdmissionReview
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		return nil, fmt.Errorf("decode answer (%s): %w", resp.Status, err)
	}
	if out.Response == nil || out.Response.Result == nil && !out.Response.Allowed {
		return nil, fmt.Errorf("no answer in %s", resp.Status)
	}
	if out.Response.Result == nil {
		out.Response.Result = &metav1.Status{}
	}
	return out.Response, nil
}

package e2e

import (
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
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/driftguard/driftguard/apply"
	"github.com/driftguard/driftguard/audit"
	"github.com/driftguard/driftguard/certs"
	"github.com/driftguard/driftguard/drift"
	"github.com/driftguard/driftguard/render"
	"github.com/driftguard/driftguard/test/wait"
)

// A ConfigMap whose image a mutating webhook (as Kyverno or a registry
// mirror policy would) rewrites on every write: by text the live object
// never equals Git.
const mirrored = `apiVersion: v1
kind: ConfigMap
metadata:
  name: mirrored
  namespace: serverside
  labels: {serverside-test: mirror}
data:
  image: nginx
`

// startMirrorWebhook registers a mutating webhook that rewrites data.image
// "nginx" to "docker.io/library/nginx" in ConfigMaps labelled
// serverside-test=mirror, served over TLS on loopback.
func startMirrorWebhook(t *testing.T) {
	t.Helper()
	serving, err := certs.NewStatic([]string{"127.0.0.1"})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{ReadHeaderTimeout: 5 * time.Second, TLSConfig: &tls.Config{Certificates: []tls.Certificate{serving.Cert}, MinVersion: tls.VersionTLS12},
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			var review admissionv1.AdmissionReview
			if err := json.NewDecoder(r.Body).Decode(&review); err != nil || review.Request == nil {
				http.Error(w, "bad review", http.StatusBadRequest)
				return
			}
			var cm struct {
				Data map[string]string `json:"data"`
			}
			_ = json.Unmarshal(review.Request.Object.Raw, &cm)
			resp := &admissionv1.AdmissionResponse{UID: review.Request.UID, Allowed: true}
			if cm.Data["image"] == "nginx" {
				pt := admissionv1.PatchTypeJSONPatch
				resp.PatchType = &pt
				resp.Patch = []byte(`[{"op":"replace","path":"/data/image","value":"docker.io/library/nginx"}]`)
			}
			review.Response = resp
			_ = json.NewEncoder(w).Encode(review)
		})}
	go func() { _ = srv.ServeTLS(ln, "", "") }()
	t.Cleanup(func() { _ = srv.Close() })

	url := "https://" + ln.Addr().String() + "/mutate"
	none := admissionregistrationv1.SideEffectClassNone
	fail := admissionregistrationv1.Fail
	cfg := &admissionregistrationv1.MutatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: "serverside-mirror"},
		Webhooks: []admissionregistrationv1.MutatingWebhook{{
			Name:         "mirror.serverside.example.com",
			ClientConfig: admissionregistrationv1.WebhookClientConfig{URL: &url, CABundle: serving.CA},
			Rules: []admissionregistrationv1.RuleWithOperations{{
				Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create, admissionregistrationv1.Update},
				Rule:       admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"configmaps"}},
			}},
			ObjectSelector:          &metav1.LabelSelector{MatchLabels: map[string]string{"serverside-test": "mirror"}},
			FailurePolicy:           &fail,
			SideEffects:             &none,
			AdmissionReviewVersions: []string{"v1"},
		}},
	}
	if err := h.Admin.Create(context.Background(), cfg); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = h.Admin.Delete(context.Background(), cfg) })
	// Wait until the API server calls it.
	probe := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "mirror-probe", Namespace: "default", Labels: map[string]string{"serverside-test": "mirror"}}, Data: map[string]string{"image": "nginx"}}
	wait.Eventually(t, 20*time.Second, "mirror webhook active", func() error {
		_ = h.Admin.Delete(context.Background(), probe.DeepCopy())
		p := probe.DeepCopy()
		if err := h.Admin.Create(context.Background(), p); err != nil {
			return err
		}
		if p.Data["image"] != "docker.io/library/nginx" {
			return fmt.Errorf("not mutated yet")
		}
		return nil
	})
	_ = h.Admin.Delete(context.Background(), probe)
}

// TestServerSideComparison: a value the API server stores differently from
// Git's text (here a mutating webhook rewrites it) is not drift: no drift
// record, no drifted count, and full reconciles, also of a new revision, do
// not apply the object again. A server-side dry run gives a fresh desired
// object the same verdict, and a real change is still drift.
func TestServerSideComparison(t *testing.T) {
	t.Parallel()
	const ns = "serverside"
	startMirrorWebhook(t)
	repo := h.NewGuard(t, "serverside", true, map[string]string{
		"ns.yaml":       namespace(ns),
		"mirrored.yaml": mirrored,
		"cm.yaml":       configMap(ns, "cfg", "v1"),
	})
	h.WaitApplied(t, repo.Guard, repo.Initial)

	widgetPatches := func() int {
		n := 0
		for k, v := range h.APICalls() {
			if strings.HasPrefix(k, "PATCH") && strings.Contains(k, "/configmaps/mirrored") {
				n += v
			}
		}
		return n
	}
	refs := func() int {
		n := 0
		for k, v := range h.GitCalls() {
			if strings.Contains(k, "/serverside.git/info/refs") {
				n += v
			}
		}
		return n
	}
	patches, fetches := widgetPatches(), refs()
	wait.Eventually(t, 30*time.Second, "two more full reconciles", func() error {
		if refs() < fetches+2 {
			return fmt.Errorf("%d fetches so far", refs()-fetches)
		}
		return nil
	})
	// A new revision that leaves the widget alone.
	rev := repo.Change(t, "touch the config map", map[string]string{"cm.yaml": configMap(ns, "cfg", "v2")})
	g := h.WaitApplied(t, repo.Guard, rev)
	if got := widgetPatches(); got != patches {
		t.Errorf("the config map was applied %d more times; its only difference from Git's text is the mutating webhook's", got-patches)
	}
	if g.Status.DriftedObjects != 0 {
		t.Errorf("drifted objects %d (%v), want 0", g.Status.DriftedObjects, g.Status.Drifted)
	}
	if recs := h.Audit.Find(func(r audit.Record) bool {
		return r.Object.Name == "mirrored" && (r.Type == audit.Drift || r.Type == audit.Revert)
	}); len(recs) > 0 {
		t.Errorf("drift recorded for a value the server stores as mutated: %+v", recs)
	}

	// A fresh desired object (as after a restart) differs by text; one dry
	// run settles it.
	var u unstructured.Unstructured
	if err := yaml.Unmarshal([]byte(mirrored), &u.Object); err != nil {
		t.Fatal(err)
	}
	labels := u.GetLabels()
	labels[apply.GuardLabel] = repo.Guard
	u.SetLabels(labels)
	want := render.NewObject(&u, render.Source{})
	live := &unstructured.Unstructured{}
	live.SetGroupVersionKind(u.GroupVersionKind())
	if err := h.Admin.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "mirrored"}, live); err != nil {
		t.Fatal(err)
	}
	if len(want.Drift(live.Object, drift.Options{})) == 0 {
		t.Fatal("by text the mutated value must differ; the test proves nothing otherwise")
	}
	if err := (&apply.Applier{Client: h.Admin}).DryRun(context.Background(), want, live); err != nil {
		t.Fatal(err)
	}
	if got := want.Drift(live.Object, drift.Options{}); len(got) != 0 {
		t.Fatalf("after the dry run: %v", got)
	}
	// A real change still is drift.
	live.Object["data"].(map[string]any)["image"] = "evil"
	if got := want.Drift(live.Object, drift.Options{}); len(got) != 1 || got[0].Path != "/data/image" {
		t.Fatalf("a changed image must stay drift: %v", got)
	}
}

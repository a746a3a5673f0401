package secrets

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/driftguard/driftguard/api/v1alpha1"
	"github.com/driftguard/driftguard/audit"
	"github.com/driftguard/driftguard/redact"
	"github.com/driftguard/driftguard/render/sopstest"
	"github.com/driftguard/driftguard/test/harness"
	"github.com/driftguard/driftguard/test/wait"
)

// planted returns a random value that names what it stands for.
func planted(what string) string {
	return what + strings.ToLower(harness.RandomToken())[:20]
}

// output is one thing the guard sent out, by where it went.
type output struct {
	where string
	data  []byte
}

// leaks returns, for each planted value found raw or as base64 in an
// output, where it was found.
func leaks(outs []output, values map[string]string) []string {
	var found []string
	for _, o := range outs {
		for name, v := range values {
			for _, form := range []string{v, base64.RawStdEncoding.EncodeToString([]byte(v)), base64.RawURLEncoding.EncodeToString([]byte(v))} {
				if strings.Contains(string(o.data), form) {
					found = append(found, fmt.Sprintf("%s holds %s (%q)", o.where, name, form))
				}
			}
		}
	}
	return found
}

// TestSecretValuesNeverLeave: a Guard whose repository holds a
// SOPS-encrypted ConfigMap, objects with ${VAR} from a Secret (in data,
// labels and annotations), a Secret, and whose spec holds Helm values and
// variables; a second Guard whose Service cannot be applied because of a
// value from a Secret (the API server's error quotes it). People edit the
// managed objects with kubectl: denials, warnings, drift, reverts, a prune,
// an apply error, Events, notifications, status and driftguard diff all
// happen, and none of the values appears in anything that leaves, raw or
// base64.
func TestSecretValuesNeverLeave(t *testing.T) {
	ctx := context.Background()
	values := map[string]string{
		"SOPS-decrypted dsn":       planted("sopsdsn"),
		"SOPS-decrypted password":  planted("sopspw"),
		"variable from a Secret":   planted("varpw"),
		"label from a Secret":      planted("lblpw"),
		"data of a Secret in Git":  planted("gitsecret"),
		"Helm values of the spec":  planted("helmval"),
		"variable of the spec":     planted("specvar"),
		"variable only in a label": planted("lblonly"),
	}
	v := func(name string) string { return values[name] }
	key, err := sopstest.NewKey()
	if err != nil {
		t.Fatal(err)
	}
	enc, err := sopstest.Encrypt([]byte(fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: app\n  namespace: secrets\ndata:\n  dsn: %s\n  password: %s\n",
		v("SOPS-decrypted dsn"), v("SOPS-decrypted password"))), sopstest.Options{EncryptedRegex: "^data$"}, key.Recipient)
	if err != nil {
		t.Fatal(err)
	}
	for name, val := range values {
		if strings.Contains(string(enc), val) && strings.HasPrefix(name, "SOPS") {
			t.Fatalf("the fixture is not encrypted")
		}
	}
	for _, s := range []*corev1.Secret{
		{ObjectMeta: metav1.ObjectMeta{Namespace: "driftguard-system", Name: "secrets-age"}, Data: map[string][]byte{"identity.agekey": []byte(key.Identity)}},
		{ObjectMeta: metav1.ObjectMeta{Namespace: "driftguard-system", Name: "secrets-vars"}, StringData: map[string]string{
			"DB_PASS": v("variable from a Secret"), "LABEL_PW": v("label from a Secret"), "LABEL_ONLY": v("variable only in a label")}},
	} {
		if err := h.Admin.Create(ctx, s); err != nil {
			t.Fatal(err)
		}
	}
	helmValues, _ := json.Marshal(map[string]any{"db": map[string]any{"password": v("Helm values of the spec")}})
	withSecrets := func(s *v1alpha1.GuardSpec) {
		s.Decryption = &v1alpha1.Decryption{Provider: "sops", SecretRef: v1alpha1.SecretReference{Name: "secrets-age", Namespace: "driftguard-system"}}
		s.VarsFrom = []v1alpha1.VarsReference{{Kind: "Secret", Name: "secrets-vars", Namespace: "driftguard-system"}}
		s.Vars = map[string]string{"SPEC_VAR": v("variable of the spec")}
		s.Helm = &v1alpha1.HelmSpec{Values: &apiextensionsv1.JSON{Raw: helmValues}}
	}
	repo := h.NewGuard(t, "secrets", true, map[string]string{
		"ns.yaml":  "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: secrets\n",
		"app.yaml": string(enc),
		"vars.yaml": `apiVersion: v1
kind: ConfigMap
metadata:
  name: vars
  namespace: secrets
  labels:
    pw: ${LABEL_PW}
    only: ${LABEL_ONLY}
  annotations:
    note: token ${DB_PASS}
    driftguard.io/enforcement: warn
data:
  password: ${DB_PASS}
  url: postgres://u:${DB_PASS}@db/x
`,
		"extra.yaml":  "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: extra\n  namespace: secrets\n  annotations:\n    note: ${DB_PASS}\ndata:\n  value: plain\n",
		"secret.yaml": fmt.Sprintf("apiVersion: v1\nkind: Secret\nmetadata:\n  name: creds\n  namespace: secrets\nstringData:\n  token: %s\n", v("data of a Secret in Git")),
	}, withSecrets)
	h.WaitApplied(t, repo.Guard, repo.Initial)
	bad := h.NewGuard(t, "secrets-bad", true, map[string]string{
		"ns.yaml":  "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: secrets-bad\n",
		"cm.yaml":  "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: drifted\n  namespace: secrets-bad\n  annotations:\n    driftguard.io/enforcement: warn\ndata:\n  password: ${DB_PASS}\n",
		"svc.yaml": "apiVersion: v1\nkind: Service\nmetadata:\n  name: bad\n  namespace: secrets-bad\nspec:\n  type: ${DB_PASS}\n  ports:\n  - port: 80\n",
	}, withSecrets, func(s *v1alpha1.GuardSpec) { off := false; s.SelfHeal = &off })

	var outs []output
	kubectl := func(wantErr bool, args ...string) string {
		t.Helper()
		out, err := h.Kubectl(t, args...)
		if (err != nil) != wantErr {
			t.Fatalf("kubectl %s: error %v, want error %v:\n%s", strings.Join(args, " "), err, wantErr, out)
		}
		outs = append(outs, output{"kubectl " + strings.Join(args[:3], " "), []byte(out)})
		return out
	}
	// Denied: the message names the fields and Git's values.
	if out := kubectl(true, "patch", "configmap", "app", "-n", "secrets", "--type=merge", "-p",
		fmt.Sprintf(`{"data":{"dsn":"edited-%s","password":"edited"}}`, v("SOPS-decrypted dsn"))); !strings.Contains(out, "denied") || !strings.Contains(out, redact.Marker) {
		t.Errorf("the denial must name the fields with the values redacted:\n%s", out)
	}
	// Warned and reverted: data, a label and an annotation from a Secret.
	if out := kubectl(false, "patch", "configmap", "vars", "-n", "secrets", "--type=merge", "-p",
		`{"data":{"password":"edited","url":"edited"},"metadata":{"labels":{"pw":"edited","only":"edited"},"annotations":{"note":"edited"}}}`); !strings.Contains(out, "Warning") {
		t.Fatalf("the change must be admitted with a warning:\n%s", out)
	}
	recs := h.Audit
	recs.Wait(t, time.Minute, "revert of vars", func(r audit.Record) bool {
		return r.Type == audit.Revert && r.Object.Name == "vars"
	})
	// Drift left in place (self-heal off), and an apply error that quotes a value.
	wait.Eventually(t, time.Minute, "the ConfigMap of secrets-bad applied", func() error {
		var cm corev1.ConfigMap
		return h.Admin.Get(ctx, client.ObjectKey{Namespace: "secrets-bad", Name: "drifted"}, &cm)
	})
	kubectl(false, "patch", "configmap", "drifted", "-n", "secrets-bad", "--type=merge", "-p", `{"data":{"password":"edited"}}`)
	recs.Wait(t, time.Minute, "drift of drifted", func(r audit.Record) bool { return r.Type == audit.Drift && r.Object.Name == "drifted" })
	recs.Wait(t, time.Minute, "the failed apply of the Service", func(r audit.Record) bool {
		return r.Guard == bad.Guard && r.Error != "" && strings.Contains(r.Error, "bad")
	})
	// A prune.
	rev := repo.Change(t, "remove extra", nil, "extra.yaml")
	h.WaitApplied(t, repo.Guard, rev)
	recs.Wait(t, time.Minute, "prune of extra", func(r audit.Record) bool { return r.Type == audit.Prune && r.Object.Name == "extra" })
	wait.Eventually(t, time.Minute, "the failure in the status of secrets-bad", func() error {
		g := h.Guard(t, bad.Guard)
		if c := meta(g, v1alpha1.ConditionReady); c == nil || c.Status != metav1.ConditionFalse || !strings.Contains(c.Message, "Unsupported value") {
			return fmt.Errorf("ready condition %+v", c)
		}
		return nil
	})
	if c := meta(h.Guard(t, bad.Guard), v1alpha1.ConditionReady); !strings.Contains(c.Message, redact.Marker) {
		t.Errorf("the Ready condition must quote the API server's error with the value redacted: %s", c.Message)
	}
	wait.Eventually(t, time.Minute, "notifications of drift and of the failed sync", func() error {
		var kinds []string
		for _, b := range notifications.all() {
			var n struct{ Kind, Guard string }
			_ = json.Unmarshal(b, &n)
			kinds = append(kinds, n.Guard+"/"+n.Kind)
		}
		for _, want := range []string{"secrets-bad/drift", "secrets-bad/sync-failed"} {
			if !strings.Contains(strings.Join(kinds, " "), want) {
				return fmt.Errorf("notifications %v lack %s", kinds, want)
			}
		}
		return nil
	})

	// driftguard diff of a drift left in place: the Guard is suspended (a
	// full reconcile would apply Git's value again).
	suspended := h.Guard(t, bad.Guard)
	suspended.Spec.Suspend = true
	if err := h.Admin.Update(ctx, suspended); err != nil {
		t.Fatal(err)
	}
	// Once the Guard says it is suspended, neither self-heal nor a
	// reconcile puts Git's value back (both read the same spec).
	wait.Eventually(t, time.Minute, "Suspended condition", func() error {
		c := meta(h.Guard(t, bad.Guard), v1alpha1.ConditionSuspended)
		if c == nil || c.Status != metav1.ConditionTrue {
			return fmt.Errorf("condition %+v", c)
		}
		return nil
	})
	if out, err := h.Kubectl(t, "patch", "configmap", "drifted", "-n", "secrets-bad", "--type=merge", "-p", `{"data":{"password":"edited-again"}}`); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	wait.Eventually(t, time.Minute, "the drift left in place", func() error {
		var cm corev1.ConfigMap
		if err := h.Admin.Get(ctx, client.ObjectKey{Namespace: "secrets-bad", Name: "drifted"}, &cm); err != nil {
			return err
		}
		if cm.Data["password"] != "edited-again" {
			return fmt.Errorf("password is %q", cm.Data["password"])
		}
		return nil
	})
	bin, err := harness.Binary()
	if err != nil {
		t.Fatal(err)
	}
	diff, err := exec.Command(bin, "diff", bad.Guard, "--kubeconfig", h.Cluster.AdminKubeconfig, "--namespace", "driftguard-system").CombinedOutput()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 1 || !strings.Contains(string(diff), "/data/password") || !strings.Contains(string(diff), redact.Marker) {
		t.Errorf("driftguard diff (%v) must show the drifted field with Git's value redacted:\n%s", err, diff)
	}
	outs = append(outs, output{"driftguard diff", diff})

	// Everything that left.
	for _, typ := range []struct {
		t      audit.Type
		action string
	}{{audit.Decision, "deny"}, {audit.Decision, "warn"}, {audit.Drift, ""}, {audit.Revert, ""}, {audit.Prune, "deleted"}, {audit.Apply, ""}} {
		if len(recs.Find(func(r audit.Record) bool { return r.Type == typ.t && (typ.action == "" || r.Action == typ.action) })) == 0 {
			t.Errorf("no %s %s record: the test did not exercise it", typ.t, typ.action)
		}
	}
	file, err := os.ReadFile(h.AuditFile)
	if err != nil {
		t.Fatal(err)
	}
	outs = append(outs, output{"audit file", file})
	stdout, _ := json.Marshal(recs.All())
	outs = append(outs, output{"audit stdout", stdout})
	if !strings.Contains(string(file), redact.Marker) {
		t.Errorf("no record shows %s: the planted values never reached a record", redact.Marker)
	}
	log, err := os.ReadFile(filepath.Join(h.Dir, "guard.log"))
	if err != nil {
		t.Fatal(err)
	}
	outs = append(outs, output{"process log", log})
	var events corev1.EventList
	if err := h.Admin.List(ctx, &events); err != nil {
		t.Fatal(err)
	}
	ev, _ := json.Marshal(events)
	outs = append(outs, output{"Events", ev})
	if !strings.Contains(string(ev), `"reason":"Denied"`) || !strings.Contains(string(ev), "redacted") { // json.Marshal writes the marker's <> as \u003c \u003e
		var reasons []string
		for _, e := range events.Items {
			reasons = append(reasons, e.InvolvedObject.Name+":"+e.Reason)
		}
		t.Errorf("no Denied Event with a redacted value: the test did not exercise the Event sink; events: %v", reasons)
	}
	for _, g := range []string{repo.Guard, bad.Guard} {
		st, _ := json.Marshal(h.Guard(t, g).Status)
		outs = append(outs, output{"status of " + g, st})
	}
	for i, b := range notifications.all() {
		outs = append(outs, output{fmt.Sprintf("notification %d", i), b})
	}
	for _, l := range leaks(outs, values) {
		t.Error(l)
	}
	// The values are in force: applied as Git and the Secrets say.
	var cm corev1.ConfigMap
	if err := h.Admin.Get(ctx, client.ObjectKey{Namespace: "secrets", Name: "app"}, &cm); err != nil || cm.Data["dsn"] != v("SOPS-decrypted dsn") {
		t.Errorf("app not applied with its decrypted value: %v", err)
	}
}

func meta(g *v1alpha1.Guard, typ string) *metav1.Condition {
	for i := range g.Status.Conditions {
		if g.Status.Conditions[i].Type == typ {
			return &g.Status.Conditions[i]
		}
	}
	return nil
}

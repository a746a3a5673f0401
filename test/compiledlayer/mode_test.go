package compiledlayer

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/driftguard/driftguard/api/v1alpha1"
	"github.com/driftguard/driftguard/audit"
	"github.com/driftguard/driftguard/compiled"
	"github.com/driftguard/driftguard/test/harness"
	"github.com/driftguard/driftguard/test/wait"
)

// With --admission-mode=compiled the API server decides, by the compiled
// policies, every change of a managed object they can decide, also while
// the guard is up; the guard's webhooks see only creates and what the
// policies leave to them (here a Deployment whose ignore rule points into a
// list), which they decide and record as ever. A change the policies admit
// with a warning is reverted by self-heal and attributed, by the API
// server's stamp, to the person who made it.
func TestCompiledMode(t *testing.T) {
	const ns, guard = "lean", "lean"
	ctx := context.Background()
	_, rev := gitNamespace(t, ns, map[string]string{
		"settings.yaml": configMap(ns, "settings", "  a: \"1\"\n"),
		"soft.yaml":     strings.Replace(configMap(ns, "soft", "  a: \"1\"\n"), "metadata:\n", "metadata:\n  annotations: {driftguard.io/enforcement: warn}\n", 1),
		"listed.yaml":   deployment(ns, "listed", 1),
		// The only Secret, in revert mode: no policy decides it; the
		// stamp policy names its writers.
		"token.yaml": "apiVersion: v1\nkind: Secret\nmetadata:\n  name: token\n  namespace: " + ns + "\n  annotations: {driftguard.io/enforcement: revert}\nstringData:\n  k: \"1\"\n",
	})
	g := &v1alpha1.Guard{
		ObjectMeta: metav1.ObjectMeta{Name: guard},
		Spec: v1alpha1.GuardSpec{Git: &v1alpha1.GitSource{URL: git.URL(guard), Ref: "main"}, Interval: metav1.Duration{Duration: 30 * time.Second},
			Ignore: []v1alpha1.IgnoreRule{{Group: "apps", Kind: "Deployment", Name: "listed", JSONPointers: []string{"/spec/template/spec/containers/0/image"}}}},
	}
	if err := admin.Create(ctx, g); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = admin.Delete(ctx, g) })
	records := &harness.Records{}
	guardProcess := startGuard(t, filepath.Join(workDir, t.Name()), "compiled", records)
	waitIndexed(t, ns, compiled.Key("", "configmaps", "settings"), "settings.yaml:1", rev)

	// The webhooks are narrowed to what the policies leave.
	leftover := "deployments.apps_" + ns + "/listed"
	wait.Eventually(t, 60*time.Second, "the mutating webhook sees only creates and the leftover", func() error {
		var m admissionregistrationv1.MutatingWebhookConfiguration
		if err := admin.Get(ctx, types.NamespacedName{Name: webhookName}, &m); err != nil {
			return err
		}
		var names []string
		for _, w := range m.Webhooks {
			names = append(names, w.Name)
			i := slices.IndexFunc(w.MatchConditions, func(c admissionregistrationv1.MatchCondition) bool { return c.Name == "left-by-the-compiled-policies" })
			if i < 0 || !strings.Contains(w.MatchConditions[i].Expression, leftover) {
				return fmt.Errorf("webhook %s: conditions %+v", w.Name, w.MatchConditions)
			}
		}
		if strings.Join(names, ",") != "objects.driftguard.io,deletes.driftguard.io,scale.driftguard.io" {
			return fmt.Errorf("webhooks %v", names)
		}
		return nil
	})
	var v admissionregistrationv1.ValidatingWebhookConfiguration
	if err := admin.Get(ctx, types.NamespacedName{Name: webhookName}, &v); err != nil {
		t.Fatal(err)
	}
	for _, w := range v.Webhooks {
		if w.Name == "objects.driftguard.io" || w.Name == "scale.driftguard.io" {
			t.Fatalf("the validating configuration still decides managed objects: %s", w.Name)
		}
	}

	kubectl := func(args ...string) error {
		_, _, err := cluster.Kubectl(ctx, aliceKubeconfig, append([]string{"-n", ns}, args...)...)
		return err
	}
	// The API server decides, the guard up or not.
	err := kubectl("patch", "configmap", "settings", "--type=merge", "-p", `{"data":{"a":"2"}}`)
	if err == nil || !strings.Contains(err.Error(), "ValidatingAdmissionPolicy") || !strings.Contains(err.Error(), "settings.yaml:1") {
		t.Fatalf("an edit the compiled policies decide: %v", err)
	}
	err = kubectl("delete", "configmap", "settings", "--wait=false")
	if err == nil || !strings.Contains(err.Error(), "ValidatingAdmissionPolicy") {
		t.Fatalf("a delete the compiled policies decide: %v", err)
	}
	// What they leave goes to the webhook, which decides and records.
	err = kubectl("scale", "deployment", "listed", "--replicas=4")
	if err == nil || !strings.Contains(err.Error(), "admission webhook") {
		t.Fatalf("a scale the compiled policies leave to the webhook: %v", err)
	}
	records.Wait(t, 10*time.Second, "the guard records the denied scale it decided", func(r audit.Record) bool {
		return r.Type == audit.Decision && r.User == "alice" && r.Action == "deny" && r.Object.Name == "listed"
	})

	// The guard trusts the API server's stamp on a resource from a settle
	// (5 s) after the stamp policy it wrote matched it. The webhooks above
	// were narrowed a settle after the first index the guard put in force,
	// which may have come before the Guard's revision was rendered: the
	// stamp policy may have matched ConfigMaps and Secrets later (under
	// load, until 2026-12-06, alice's warned edit below then came within
	// that settle and was recorded as nobody's).
	wait.Eventually(t, 30*time.Second, "the stamp policy matches ConfigMaps and Secrets", func() error {
		var m admissionregistrationv1.MutatingAdmissionPolicy
		if err := admin.Get(ctx, types.NamespacedName{Name: webhookName + "-stamp"}, &m); err != nil {
			return err
		}
		var resources []string
		for _, r := range m.Spec.MatchConstraints.ResourceRules {
			resources = append(resources, r.Resources...)
		}
		if !slices.Contains(resources, "configmaps") || !slices.Contains(resources, "secrets") {
			return fmt.Errorf("rules %+v", m.Spec.MatchConstraints.ResourceRules)
		}
		return nil
	})
	time.Sleep(6 * time.Second) // the settle after which the guard trusts the stamp there

	// Warn: admitted, stamped by the API server, reverted and attributed.
	if err := kubectl("patch", "configmap", "soft", "--type=merge", "-p", `{"data":{"a":"by-hand"}}`); err != nil {
		t.Fatalf("an edit in warn mode: %v", err)
	}
	records.Wait(t, 30*time.Second, "self-heal reverts the warned edit and names alice", func(r audit.Record) bool {
		return r.Type == audit.Drift && r.User == "alice" && r.Object.Name == "soft"
	})
	wait.Eventually(t, 30*time.Second, "soft is back to Git", func() error {
		var cm corev1.ConfigMap
		if err := admin.Get(ctx, client.ObjectKey{Namespace: ns, Name: "soft"}, &cm); err != nil {
			return err
		}
		if cm.Data["a"] != "1" {
			return fmt.Errorf("a=%q", cm.Data["a"])
		}
		return nil
	})

	// Revert mode: alice's edit of the Secret, written with the controller
	// manager's name in the API server's stamp annotation, is stamped by
	// the API server with hers, reverted and recorded as hers (until
	// 2026-12-05 the stamp policy did not match Secrets here, the forged
	// name was trusted and the system controller's change kept).
	forged := fmt.Sprintf(`{"metadata":{"annotations":{%q:"system:kube-controller-manager"}},"stringData":{"k":"by-hand"}}`, v1alpha1.APIServerChangedByAnnotation)
	if err := kubectl("patch", "secret", "token", "--type=merge", "-p", forged); err != nil {
		t.Fatalf("an edit in revert mode: %v", err)
	}
	records.Wait(t, 30*time.Second, "self-heal reverts the edit and names alice", func(r audit.Record) bool {
		return r.Type == audit.Drift && r.User == "alice" && r.Object.Name == "token" && r.Action == "revert"
	})
	wait.Eventually(t, 30*time.Second, "token is back to Git", func() error {
		var sec corev1.Secret
		if err := admin.Get(ctx, client.ObjectKey{Namespace: ns, Name: "token"}, &sec); err != nil {
			return err
		}
		if string(sec.Data["k"]) != "1" {
			return fmt.Errorf("k=%q", sec.Data["k"])
		}
		return nil
	})

	// The controller manager writes each policy's status (its type
	// checking): a new resourceVersion, the same generation, no one's
	// change. (Until 2026-12-06 the guard's next full check wrote every
	// policy again and logged it as restored.)
	wait.Eventually(t, 30*time.Second, "the controller manager checked the policies' types", func() error {
		var list admissionregistrationv1.ValidatingAdmissionPolicyList
		if err := admin.List(ctx, &list, client.MatchingLabels{compiled.CompiledLabel: webhookName}); err != nil {
			return err
		}
		for _, p := range list.Items {
			if p.Status.TypeChecking == nil || p.Status.ObservedGeneration != p.Generation {
				return fmt.Errorf("%s: status %+v", p.Name, p.Status)
			}
		}
		if len(list.Items) == 0 {
			return fmt.Errorf("no policies")
		}
		return nil
	})

	// An admin deletes the warn policy and makes it again with its labels
	// and the guard's digest annotation copied, every validation true: a
	// new object at generation 1, as the guard's own may be. The guard
	// tells it by its uid and puts back its own.
	warn := types.NamespacedName{Name: webhookName + "-warn"}
	var original admissionregistrationv1.ValidatingAdmissionPolicy
	if err := admin.Get(ctx, warn, &original); err != nil {
		t.Fatal(err)
	}
	forgedPolicy := &admissionregistrationv1.ValidatingAdmissionPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: original.Name, Labels: original.Labels, Annotations: original.Annotations},
		Spec:       *original.Spec.DeepCopy(),
	}
	for i := range forgedPolicy.Spec.Validations {
		forgedPolicy.Spec.Validations[i].Expression = "true"
	}
	wait.Eventually(t, 30*time.Second, "an admin makes the warn policy again, its validations true", func() error {
		if err := admin.Delete(ctx, &admissionregistrationv1.ValidatingAdmissionPolicy{ObjectMeta: metav1.ObjectMeta{Name: warn.Name}}); err != nil && !apierrors.IsNotFound(err) {
			return err
		}
		return admin.Create(ctx, forgedPolicy.DeepCopy())
	})
	wait.Eventually(t, 60*time.Second, "the guard puts back its warn policy", func() error {
		var p admissionregistrationv1.ValidatingAdmissionPolicy
		if err := admin.Get(ctx, warn, &p); err != nil {
			return err
		}
		if !reflect.DeepEqual(p.Spec.Validations, original.Spec.Validations) {
			return fmt.Errorf("validations %+v", p.Spec.Validations)
		}
		return nil
	})

	// An admin takes the index policy's binding away and empties a bucket
	// of the index (a write that keeps the guard's annotations and, as for
	// any ConfigMap, a generation of 0): the guard's next full check puts
	// back both, and nothing else.
	index := types.NamespacedName{Namespace: ns, Name: webhookName + "-index"}
	var before corev1.ConfigMap
	if err := admin.Get(ctx, index, &before); err != nil {
		t.Fatal(err)
	}
	bucket := ""
	for k, v := range before.Data {
		if strings.Contains(v, "\nsettings=") {
			bucket = k
		}
	}
	if bucket == "" {
		t.Fatalf("no bucket holds settings: %v", before.Data)
	}
	wait.Eventually(t, 30*time.Second, "an admin empties a bucket of the index", func() error {
		b := &admissionregistrationv1.ValidatingAdmissionPolicyBinding{ObjectMeta: metav1.ObjectMeta{Name: webhookName + "-index"}}
		if err := admin.Delete(ctx, b); err != nil && !apierrors.IsNotFound(err) {
			return err
		}
		patch, _ := json.Marshal(map[string]any{"data": map[string]string{bucket: "\n"}})
		return admin.Patch(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: index.Name}}, client.RawPatch(types.MergePatchType, patch))
	})
	wait.Eventually(t, 60*time.Second, "the guard writes the index again", func() error {
		var cm corev1.ConfigMap
		if err := admin.Get(ctx, index, &cm); err != nil {
			return err
		}
		if cm.Data[bucket] != before.Data[bucket] {
			return fmt.Errorf("bucket %s: %q", bucket, cm.Data[bucket])
		}
		return nil
	})
	log, err := os.ReadFile(guardProcess.LogPath)
	if err != nil {
		t.Fatal(err)
	}
	var restored []string
	for line := range strings.Lines(string(log)) {
		if strings.Contains(line, "restored a compiled admission object") {
			var entry struct{ Object string }
			if err := json.Unmarshal([]byte(line), &entry); err != nil {
				t.Fatalf("guard log line %q: %v", line, err)
			}
			restored = append(restored, entry.Object)
		}
	}
	slices.Sort(restored)
	if want := []string{"ConfigMap/" + index.Namespace + "/" + index.Name, "ValidatingAdmissionPolicy//" + warn.Name, "ValidatingAdmissionPolicyBinding//" + index.Name}; !slices.Equal(restored, want) {
		t.Errorf("restored %q, want %q (the policies' status is the controller manager's to write)", restored, want)
	}
}

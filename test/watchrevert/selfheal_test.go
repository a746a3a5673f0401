// Package watchrevert drives the drift watcher end to end with the admission
// webhook switched off, so that manual changes reach the API server and must
// be reverted by the informer.
package watchrevert

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/driftguard/driftguard/api/v1alpha1"
	"github.com/driftguard/driftguard/app"
	"github.com/driftguard/driftguard/apply"
	"github.com/driftguard/driftguard/audit"
	"github.com/driftguard/driftguard/test/harness"
	"github.com/driftguard/driftguard/test/wait"
)

var h *harness.Harness

// globalIgnore is the guard's --ignore-file: it hides /data/free of every
// ConfigMap named "global".
const globalIgnore = `- kind: ConfigMap
  name: global
  jsonPointers: [/data/free]
`

func TestMain(m *testing.M) {
	ignoreFile := filepath.Join(os.TempDir(), fmt.Sprintf("driftguard-ignore-%d.yaml", os.Getpid()))
	if err := os.WriteFile(ignoreFile, []byte(globalIgnore), 0o644); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	defer os.Remove(ignoreFile)
	var err error
	h, err = harness.Start(harness.Options{Guard: func(o *app.Options) { o.WebhookRegister = false; o.IgnoreFile = ignoreFile }})
	if err != nil {
		fmt.Fprintln(os.Stderr, "start harness:", err)
		os.Exit(1)
	}
	code := m.Run()
	h.Stop()
	_ = os.Remove(ignoreFile)
	os.Exit(code)
}

const manifests = `apiVersion: v1
kind: Namespace
metadata:
  name: %[1]s
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: cfg
  namespace: %[1]s
data:
  greeting: from git
---
apiVersion: v1
kind: Secret
metadata:
  name: creds
  namespace: %[1]s
stringData:
  password: hunter2
`

func configMap(t *testing.T, ns string) (*corev1.ConfigMap, error) {
	t.Helper()
	var cm corev1.ConfigMap
	err := h.Admin.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "cfg"}, &cm)
	return &cm, err
}

func waitGreeting(t *testing.T, ns, want string) {
	t.Helper()
	wait.Eventually(t, 10*time.Second, "greeting back to "+want, func() error {
		cm, err := configMap(t, ns)
		if err != nil {
			return err
		}
		if cm.Data["greeting"] != want {
			return fmt.Errorf("greeting is %q", cm.Data["greeting"])
		}
		return nil
	})
}

func TestManualPatchIsReverted(t *testing.T) {
	t.Parallel()
	const ns = "patch"
	repo := h.NewGuard(t, "patch", true, map[string]string{"all.yaml": fmt.Sprintf(manifests, ns)})
	h.WaitApplied(t, repo.Guard, repo.Initial)

	if out, err := h.Kubectl(t, "patch", "configmap", "cfg", "-n", ns, "--type=merge", "-p", `{"data":{"greeting":"by hand"}}`); err != nil {
		t.Fatalf("patch with the webhook off: %v %s", err, out)
	}
	waitGreeting(t, ns, "from git")
	rec := h.Audit.Wait(t, 10*time.Second, "drift of cfg", func(r audit.Record) bool {
		return r.Type == audit.Drift && r.Guard == repo.Guard && r.Object.Name == "cfg"
	})
	if rec.Manager != "kubectl-patch" || len(rec.Fields) != 1 || rec.Fields[0].Path != "/data/greeting" ||
		rec.Fields[0].Desired != "from git" || rec.Fields[0].Live != "by hand" {
		t.Fatalf("drift record must name the field manager and the field diff: %+v", rec)
	}
	if rec.Source == nil || rec.Source.Path != "all.yaml" || rec.Source.Line != 6 {
		t.Fatalf("drift record must name file and line: %+v", rec.Source)
	}
	h.Audit.Wait(t, 10*time.Second, "revert of cfg", func(r audit.Record) bool {
		return r.Type == audit.Revert && r.Guard == repo.Guard && r.Object.Name == "cfg" && r.Manager == "kubectl-patch"
	})
}

func TestDeletedObjectIsRecreated(t *testing.T) {
	t.Parallel()
	const ns = "delete"
	repo := h.NewGuard(t, "delete", true, map[string]string{"all.yaml": fmt.Sprintf(manifests, ns)})
	h.WaitApplied(t, repo.Guard, repo.Initial)
	before, err := configMap(t, ns)
	if err != nil {
		t.Fatal(err)
	}
	if out, err := h.Kubectl(t, "delete", "configmap", "cfg", "-n", ns); err != nil {
		t.Fatalf("delete: %v %s", err, out)
	}
	wait.Eventually(t, 10*time.Second, "cfg recreated", func() error {
		cm, err := configMap(t, ns)
		if err != nil {
			return err
		}
		if cm.UID == before.UID {
			return fmt.Errorf("still the old object")
		}
		return nil
	})
	h.Audit.Wait(t, 10*time.Second, "recreate of cfg", func(r audit.Record) bool {
		return r.Type == audit.Recreate && r.Guard == repo.Guard && r.Object.Name == "cfg"
	})
}

// TestImmutableLockIsReplaced: a ConfigMap changed and made immutable in
// one write (the webhook down, or its namespace excluded) refuses every
// later change, the field itself included: patches and applies fail for
// ever and Git's value never comes back. Until 2026-12-05 self-heal
// retried the revert every 30 s; now it deletes that object (as it was
// seen: UID and resourceVersion preconditions) and creates it from Git.
func TestImmutableLockIsReplaced(t *testing.T) {
	t.Parallel()
	const ns = "locked"
	repo := h.NewGuard(t, "locked", true, map[string]string{"all.yaml": fmt.Sprintf(manifests, ns)})
	h.WaitApplied(t, repo.Guard, repo.Initial)
	before, err := configMap(t, ns)
	if err != nil {
		t.Fatal(err)
	}
	if out, err := h.Kubectl(t, "patch", "configmap", "cfg", "-n", ns, "--type=merge", "-p", `{"data":{"greeting":"locked in"},"immutable":true}`); err != nil {
		t.Fatalf("patch with the webhook off: %v %s", err, out)
	}
	wait.Eventually(t, 20*time.Second, "cfg back to Git, not immutable", func() error {
		cm, err := configMap(t, ns)
		if err != nil {
			return err
		}
		if cm.Data["greeting"] != "from git" || (cm.Immutable != nil && *cm.Immutable) {
			return fmt.Errorf("greeting %q, immutable %v", cm.Data["greeting"], cm.Immutable)
		}
		if cm.UID == before.UID {
			return fmt.Errorf("still the object made immutable")
		}
		return nil
	})
	h.Audit.Wait(t, 10*time.Second, "revert of cfg", func(r audit.Record) bool {
		return r.Type == audit.Revert && r.Guard == repo.Guard && r.Object.Name == "cfg" && r.Manager == "kubectl-patch"
	})
}

func TestSecretDriftIsRedacted(t *testing.T) {
	t.Parallel()
	const ns = "secret"
	repo := h.NewGuard(t, "secret", true, map[string]string{"all.yaml": fmt.Sprintf(manifests, ns)})
	h.WaitApplied(t, repo.Guard, repo.Initial)
	if out, err := h.Kubectl(t, "patch", "secret", "creds", "-n", ns, "--type=merge", "-p", `{"stringData":{"password":"letmein"}}`); err != nil {
		t.Fatalf("patch secret: %v %s", err, out)
	}
	rec := h.Audit.Wait(t, 10*time.Second, "drift of creds", func(r audit.Record) bool {
		return r.Type == audit.Drift && r.Object.Name == "creds"
	})
	for _, f := range rec.Fields {
		for _, v := range []any{f.Desired, f.Live} {
			s := fmt.Sprint(v)
			if s == "hunter2" || s == "letmein" || s == "aHVudGVyMg==" || s == "bGV0bWVpbg==" {
				t.Fatalf("secret value in audit record: %+v", rec)
			}
		}
	}
	wait.Eventually(t, 10*time.Second, "secret reverted", func() error {
		var s corev1.Secret
		if err := h.Admin.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "creds"}, &s); err != nil {
			return err
		}
		if string(s.Data["password"]) != "hunter2" {
			return fmt.Errorf("password not reverted")
		}
		return nil
	})
}

func TestSelfHealOffRecordsButKeeps(t *testing.T) {
	t.Parallel()
	const ns = "noheal"
	repo := h.NewGuard(t, "noheal", true, map[string]string{"all.yaml": fmt.Sprintf(manifests, ns)})
	h.WaitApplied(t, repo.Guard, repo.Initial)
	g := h.Guard(t, repo.Guard)
	off := false
	g.Spec.SelfHeal = &off
	g.Spec.Interval = metav1.Duration{Duration: time.Hour}
	if err := h.Admin.Update(context.Background(), g); err != nil {
		t.Fatal(err)
	}
	wait.Eventually(t, 10*time.Second, "spec observed", func() error {
		g := h.Guard(t, repo.Guard)
		if g.Status.ObservedGeneration != g.Generation || meta.IsStatusConditionFalse(g.Status.Conditions, v1alpha1.ConditionReady) {
			return fmt.Errorf("generation %d observed %d", g.Generation, g.Status.ObservedGeneration)
		}
		return nil
	})
	if out, err := h.Kubectl(t, "patch", "configmap", "cfg", "-n", ns, "--type=merge", "-p", `{"data":{"greeting":"accepted"}}`); err != nil {
		t.Fatalf("patch: %v %s", err, out)
	}
	h.Audit.Wait(t, 10*time.Second, "drift recorded", func(r audit.Record) bool {
		return r.Type == audit.Drift && r.Guard == repo.Guard && r.Object.Name == "cfg"
	})
	if got := h.Audit.Find(func(r audit.Record) bool { return r.Type == audit.Revert && r.Guard == repo.Guard }); len(got) != 0 {
		t.Fatalf("reverted with selfHeal off: %+v", got)
	}
	cm, err := configMap(t, ns)
	if err != nil || cm.Data["greeting"] != "accepted" {
		t.Fatalf("change was not kept: %v %v", err, cm.Data)
	}
	// driftguard diff GUARD shows the same drift, field by field, exit status 1.
	out, code := driftguardCLI(t, "diff", repo.Guard, "--kubeconfig", h.Cluster.AdminKubeconfig)
	if code != 1 || !strings.Contains(out, `/data/greeting: -"from git" +"accepted"`) || !strings.Contains(out, "all.yaml:6") {
		t.Fatalf("driftguard diff: exit %d\n%s", code, out)
	}
	// driftguard diff -f on the local checkout says the same before anything is pushed.
	out, code = driftguardCLI(t, "diff", "-f", repo.Dir, "--kubeconfig", h.Cluster.AdminKubeconfig)
	if code != 1 || !strings.Contains(out, `/data/greeting: -"from git" +"accepted"`) || !strings.Contains(out, "1 of 3 objects differ") {
		t.Fatalf("driftguard diff -f: exit %d\n%s", code, out)
	}
	// kubectl get guards shows the drift without waiting for the next full reconcile (interval 1h).
	wait.Eventually(t, 10*time.Second, "status lists the drifted object", func() error {
		g := h.Guard(t, repo.Guard)
		if g.Status.DriftedObjects != 1 || len(g.Status.Drifted) != 1 || g.Status.Drifted[0] != (v1alpha1.ObjectName{Kind: "ConfigMap", Namespace: "noheal", Name: "cfg"}) {
			return fmt.Errorf("driftedObjects %d drifted %v", g.Status.DriftedObjects, g.Status.Drifted)
		}
		return nil
	})
}

// TestLabelRemovedIsDrift: taking the guard's label off a managed object
// takes it out of the informers' view, as a delete does; it is still
// there, and is reverted as drift: the label comes back, a field an
// ignore rule leaves to its owner stays as the owner wrote it, and the
// record says DRIFT and revert. Until 2026-12-05 it was recreated from
// the whole of Git over the live object (a "recreate" of an object never
// deleted), which took the owner's field back to Git's value.
func TestLabelRemovedIsDrift(t *testing.T) {
	t.Parallel()
	const ns = "unlabelled"
	cm := fmt.Sprintf("apiVersion: v1\nkind: Namespace\nmetadata:\n  name: %[1]s\n---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cfg\n  namespace: %[1]s\ndata:\n  greeting: from git\n  tuned: \"1\"\n", ns)
	repo := h.NewGuard(t, "unlabelled", true, map[string]string{"all.yaml": cm}, func(s *v1alpha1.GuardSpec) {
		s.Ignore = []v1alpha1.IgnoreRule{{Kind: "ConfigMap", ManagedFieldsManagers: []string{"tuner"}}}
	})
	h.WaitApplied(t, repo.Guard, repo.Initial)
	before, err := configMap(t, ns)
	if err != nil {
		t.Fatal(err)
	}
	if out, err := h.Kubectl(t, "patch", "configmap", "cfg", "-n", ns, "--field-manager=tuner", "--type=merge", "-p", `{"data":{"tuned":"42"}}`); err != nil {
		t.Fatalf("%v %s", err, out)
	}
	if out, err := h.Kubectl(t, "label", "configmap", "cfg", "-n", ns, apply.GuardLabel+"-"); err != nil {
		t.Fatalf("%v %s", err, out)
	}
	h.Audit.Wait(t, 10*time.Second, "revert of cfg", func(r audit.Record) bool {
		return r.Type == audit.Revert && r.Guard == repo.Guard && r.Object.Name == "cfg" && r.Operation == "DRIFT"
	})
	wait.Eventually(t, 10*time.Second, "cfg labelled again", func() error {
		cm, err := configMap(t, ns)
		if err != nil {
			return err
		}
		if cm.Labels[apply.GuardLabel] != repo.Guard {
			return fmt.Errorf("labels %v", cm.Labels)
		}
		if cm.UID != before.UID || cm.Data["tuned"] != "42" {
			return fmt.Errorf("uid %s (was %s), tuned %q: recreated from the whole of Git", cm.UID, before.UID, cm.Data["tuned"])
		}
		return nil
	})
	if got := h.Audit.Find(func(r audit.Record) bool { return r.Type == audit.Recreate && r.Guard == repo.Guard }); len(got) != 0 {
		t.Fatalf("a recreate recorded for an object never deleted: %+v", got)
	}
}

// TestIgnoreRulesInSelfHeal: a field owned by another field manager named in
// managedFieldsManagers is neither drift nor taken back when something else
// is reverted.
func TestIgnoreRulesInSelfHeal(t *testing.T) {
	t.Parallel()
	const ns = "ignore-heal"
	cm := fmt.Sprintf("apiVersion: v1\nkind: Namespace\nmetadata:\n  name: %[1]s\n---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cfg\n  namespace: %[1]s\ndata:\n  greeting: from git\n  tuned: \"1\"\n", ns)
	repo := h.NewGuard(t, "ignore-heal", true, map[string]string{"all.yaml": cm}, func(s *v1alpha1.GuardSpec) {
		s.Ignore = []v1alpha1.IgnoreRule{{Kind: "ConfigMap", ManagedFieldsManagers: []string{"tuner"}}}
	})
	h.WaitApplied(t, repo.Guard, repo.Initial)
	if out, err := h.Kubectl(t, "patch", "configmap", "cfg", "-n", ns, "--field-manager=tuner", "--type=merge", "-p", `{"data":{"tuned":"42"}}`); err != nil {
		t.Fatalf("%v %s", err, out)
	}
	if out, err := h.Kubectl(t, "patch", "configmap", "cfg", "-n", ns, "--type=merge", "-p", `{"data":{"greeting":"by hand"}}`); err != nil {
		t.Fatalf("%v %s", err, out)
	}
	waitGreeting(t, ns, "from git")
	cmObj, err := configMap(t, ns)
	if err != nil || cmObj.Data["tuned"] != "42" {
		t.Fatalf("the tuner's field was taken back: %v %v", err, cmObj.Data)
	}
	for _, r := range h.Audit.Find(func(r audit.Record) bool { return r.Guard == repo.Guard && r.Type == audit.Drift }) {
		for _, f := range r.Fields {
			if f.Path == "/data/tuned" {
				t.Fatalf("ignored field reported as drift: %+v", r)
			}
		}
	}
}

// driftguardCLI runs the driftguard binary (harness.Binary: the one make
// test builds for every suite).
func driftguardCLI(t *testing.T, args ...string) (string, int) {
	t.Helper()
	cliPath, err := harness.Binary()
	if err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(cliPath, args...).CombinedOutput()
	var ee *exec.ExitError
	switch {
	case err == nil:
		return string(out), 0
	case errors.As(err, &ee):
		return string(out), ee.ExitCode()
	}
	t.Fatalf("run driftguard: %v", err)
	return "", -1
}

// TestGlobalIgnoreFile: rules from --ignore-file apply to every Guard.
func TestGlobalIgnoreFile(t *testing.T) {
	t.Parallel()
	const ns = "global-ignore"
	all := fmt.Sprintf("apiVersion: v1\nkind: Namespace\nmetadata:\n  name: %[1]s\n---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: global\n  namespace: %[1]s\ndata:\n  free: git\n  greeting: from git\n", ns)
	repo := h.NewGuard(t, "global-ignore", true, map[string]string{"all.yaml": all})
	h.WaitApplied(t, repo.Guard, repo.Initial)
	if out, err := h.Kubectl(t, "patch", "configmap", "global", "-n", ns, "--type=merge", "-p", `{"data":{"free":"mine","greeting":"by hand"}}`); err != nil {
		t.Fatalf("%v %s", err, out)
	}
	wait.Eventually(t, 10*time.Second, "greeting reverted, free kept", func() error {
		var cm corev1.ConfigMap
		if err := h.Admin.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "global"}, &cm); err != nil {
			return err
		}
		if cm.Data["greeting"] != "from git" || cm.Data["free"] != "mine" {
			return fmt.Errorf("data %v", cm.Data)
		}
		return nil
	})
}

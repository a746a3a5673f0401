// Package identity shows on a real API server that a Guard's writes act as
// its service account (spec.serviceAccountName, or the guard's
// --default-service-account), impersonated, and never with the guard's own
// rights: apply, prune and self-heal do what the account's RBAC allows, and
// what it does not allow fails that Guard, naming the account.
package identity

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/driftguard/driftguard/api/v1alpha1"
	"github.com/driftguard/driftguard/app"
	"github.com/driftguard/driftguard/audit"
	"github.com/driftguard/driftguard/health"
	"github.com/driftguard/driftguard/test/harness"
	"github.com/driftguard/driftguard/test/wait"
)

var h *harness.Harness

const (
	guardNamespace = "driftguard-system"
	// defaultAccount is the guard's --default-service-account.
	defaultAccount = "tenant-default"
)

func TestMain(m *testing.M) {
	var err error
	h, err = harness.Start(harness.Options{Guard: func(o *app.Options) {
		o.Namespace = guardNamespace
		o.DefaultServiceAccount = defaultAccount
		// The compiled admission policies too: a Guard's service account
		// writes past them as the guard does.
		o.AdmissionMode = app.ModeBoth
	}})
	if err != nil {
		fmt.Fprintln(os.Stderr, "start harness:", err)
		os.Exit(1)
	}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: guardNamespace}}
	if err := h.Admin.Create(context.Background(), ns); err != nil && !apierrors.IsAlreadyExists(err) {
		fmt.Fprintln(os.Stderr, "create the guard's namespace:", err)
		h.Stop()
		os.Exit(1)
	}
	code := m.Run()
	h.Stop()
	os.Exit(code)
}

// configMapVerbs is what a tenant's Role allows on ConfigMaps, delete aside.
var configMapVerbs = []string{"get", "list", "watch", "create", "update", "patch"}

// tenant creates a service account in the guard's namespace and a Role
// and RoleBinding that let it write ConfigMaps in namespace ns only (envtest
// aggregates no ClusterRoles: the rules are explicit). It returns the Role
// for changes.
func tenant(t *testing.T, account, ns string, verbs []string) *rbacv1.Role {
	t.Helper()
	ctx := context.Background()
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: guardNamespace, Name: account}}
	if err := h.Admin.Create(ctx, sa); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	role := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: account},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: verbs}}}
	binding := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: account},
		RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: account},
		Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Namespace: guardNamespace, Name: account}}}
	for _, o := range []client.Object{role, binding} {
		if err := h.Admin.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	return role
}

// quickRetry retries a failed reconcile every second, so that a test sees
// the fix of a refusal at once.
func quickRetry() *v1alpha1.RetryPolicy {
	second := &metav1.Duration{Duration: time.Second}
	return &v1alpha1.RetryPolicy{Backoff: &v1alpha1.Backoff{Duration: second, Factor: 1, MaxDuration: second}}
}

func namespace(t *testing.T, name string) {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if err := h.Admin.Create(context.Background(), ns); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = h.Admin.Delete(context.Background(), ns) })
}

func configMap(ns, name, value string) string {
	return fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: %s\n  namespace: %s\ndata:\n  value: %q\n", name, ns, value)
}

// waitReady waits until the Guard's Ready condition has status and reason
// and its message holds every one of says.
func waitReady(t *testing.T, guard string, status metav1.ConditionStatus, reason string, says ...string) *metav1.Condition {
	t.Helper()
	var ready *metav1.Condition
	wait.Eventually(t, 60*time.Second, fmt.Sprintf("guard %s Ready=%s %s", guard, status, reason), func() error {
		ready = meta.FindStatusCondition(h.Guard(t, guard).Status.Conditions, v1alpha1.ConditionReady)
		if ready == nil || ready.Status != status || ready.Reason != reason {
			return fmt.Errorf("Ready: %+v", ready)
		}
		for _, s := range says {
			if !strings.Contains(ready.Message, s) {
				return fmt.Errorf("Ready message %q does not say %q", ready.Message, s)
			}
		}
		return nil
	})
	return ready
}

func exists(t *testing.T, obj client.Object, ns, name string) bool {
	t.Helper()
	err := h.Admin.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, obj)
	if err != nil && !apierrors.IsNotFound(err) {
		t.Fatal(err)
	}
	return err == nil
}

func value(t *testing.T, ns, name string) string {
	t.Helper()
	var cm corev1.ConfigMap
	if !exists(t, &cm, ns, name) {
		return "<missing>"
	}
	return cm.Data["value"]
}

// TestServiceAccountBoundToNamespace: a Guard acting as a service account
// that may write ConfigMaps in namespace A only applies A's objects and is
// refused, naming the account, for an object in namespace B, a ClusterRole
// and a Deployment in the guard's own namespace, none of which is created
// (the guard itself could have made all of them). Prune and self-heal of
// A's objects act as the account too: without its delete and patch rights
// they fail naming it, and succeed once its Role grants them.
func TestServiceAccountBoundToNamespace(t *testing.T) {
	ctx := context.Background()
	nsA, nsB := "identity-a", "identity-b"
	namespace(t, nsA)
	namespace(t, nsB)
	role := tenant(t, "team-a", nsA, configMapVerbs)
	const account = "service account driftguard-system/team-a (spec.serviceAccountName; user system:serviceaccount:driftguard-system:team-a)"

	clusterRole := `apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata:
  name: identity-escalate
rules:
- apiGroups: ["*"]
  resources: ["*"]
  verbs: ["*"]
`
	deployment := `apiVersion: apps/v1
kind: Deployment
metadata:
  name: identity-takeover
  namespace: driftguard-system
spec:
  selector: {matchLabels: {app: takeover}}
  template:
    metadata: {labels: {app: takeover}}
    spec:
      containers: [{name: c, image: registry.example/takeover:1}]
`
	repo := h.NewGuard(t, "identity-a", true, map[string]string{
		"a.yaml":           configMap(nsA, "app", "1"),
		"gone.yaml":        configMap(nsA, "gone", "1"),
		"b.yaml":           configMap(nsB, "steal", "1"),
		"clusterrole.yaml": clusterRole,
		"deployment.yaml":  deployment,
	}, func(s *v1alpha1.GuardSpec) {
		s.ServiceAccountName = "team-a"
		s.Enforcement = v1alpha1.EnforcementDryRun // the webhook admits, self-heal reverts
		s.Retry = quickRetry()
	})

	refused := waitReady(t, repo.Guard, metav1.ConditionFalse, v1alpha1.ReasonForbidden, account,
		"may not patch (server-side apply) configmaps in namespace "+nsB,
		"clusterroles.rbac.authorization.k8s.io cluster-wide",
		"deployments.apps in namespace "+guardNamespace)
	t.Logf("Ready: %s", refused.Message)
	wait.Eventually(t, 30*time.Second, "A's objects applied", func() error {
		if v := value(t, nsA, "app"); v != "1" {
			return fmt.Errorf("%s/app: %s", nsA, v)
		}
		if v := value(t, nsA, "gone"); v != "1" {
			return fmt.Errorf("%s/gone: %s", nsA, v)
		}
		return nil
	})
	if exists(t, &corev1.ConfigMap{}, nsB, "steal") {
		t.Fatalf("%s/steal was created although the Guard's service account may not write in %s", nsB, nsB)
	}
	if exists(t, &rbacv1.ClusterRole{}, "", "identity-escalate") {
		t.Fatal("the ClusterRole was created with the guard's rights")
	}
	if exists(t, &appsv1.Deployment{}, guardNamespace, "identity-takeover") {
		t.Fatal("a Deployment was created in the guard's own namespace")
	}
	h.Audit.Wait(t, 10*time.Second, "apply refused for "+nsB+"/steal", func(r audit.Record) bool {
		return r.Type == audit.Error && r.Guard == repo.Guard && r.Object.Name == "steal" && strings.Contains(r.Error, "team-a")
	})

	// Git without what the account may not write: Ready.
	rev := repo.Change(t, "only A", nil, "b.yaml", "clusterrole.yaml", "deployment.yaml")
	h.WaitApplied(t, repo.Guard, rev)

	// Prune acts as the account: without delete it is refused.
	rev = repo.Change(t, "drop gone", nil, "gone.yaml")
	waitReady(t, repo.Guard, metav1.ConditionFalse, v1alpha1.ReasonPruneFailed, account, "may not delete configmaps in namespace "+nsA)
	if value(t, nsA, "gone") != "1" {
		t.Fatalf("%s/gone was deleted although the account may not delete", nsA)
	}
	role.Rules[0].Verbs = append(configMapVerbs, "delete")
	if err := h.Admin.Update(ctx, role); err != nil {
		t.Fatal(err)
	}
	h.WaitApplied(t, repo.Guard, rev)
	wait.Eventually(t, 30*time.Second, "gone pruned", func() error {
		if v := value(t, nsA, "gone"); v != "<missing>" {
			return fmt.Errorf("%s/gone still there: %s", nsA, v)
		}
		return nil
	})

	// Self-heal acts as the account: without patch the revert is refused.
	role.Rules[0].Verbs = []string{"get", "list", "watch", "create", "update", "delete"}
	if err := h.Admin.Update(ctx, role); err != nil {
		t.Fatal(err)
	}
	edit := func(v string) {
		t.Helper()
		patch := client.RawPatch("application/merge-patch+json", []byte(`{"data":{"value":"`+v+`"}}`))
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: nsA, Name: "app"}}
		if err := h.Admin.Patch(ctx, cm, patch); err != nil {
			t.Fatalf("edit %s/app: %v", nsA, err)
		}
	}
	edit("edited")
	h.Audit.Wait(t, 30*time.Second, "revert refused as team-a", func(r audit.Record) bool {
		return r.Type == audit.Error && r.Operation == "REVERT" && r.Object.Name == "app" &&
			strings.Contains(r.Error, account) && strings.Contains(r.Error, "may not patch")
	})
	if v := value(t, nsA, "app"); v != "edited" {
		t.Fatalf("%s/app is %q: reverted without the account's patch right", nsA, v)
	}
	role.Rules[0].Verbs = append(configMapVerbs, "delete")
	if err := h.Admin.Update(ctx, role); err != nil {
		t.Fatal(err)
	}
	wait.Eventually(t, 60*time.Second, "app reverted once the account may patch", func() error {
		if v := value(t, nsA, "app"); v != "1" {
			return fmt.Errorf("%s/app: %s", nsA, v)
		}
		return nil
	})
	edit("again")
	wait.Eventually(t, 30*time.Second, "a new edit reverted", func() error {
		if v := value(t, nsA, "app"); v != "1" {
			return fmt.Errorf("%s/app: %s", nsA, v)
		}
		return nil
	})
}

// TestForeignObjectNotClaimed: an object a Guard's Git names but its
// account may not write (another team's, in their namespace) is not the
// Guard's to guard: the others' writes of it are not decided by this
// Guard's Git. Were it claimed, team-d could not create its own ConfigMap
// of that name: the webhook would deny the create as a change of an
// object Git manages, naming team-c's repository.
func TestForeignObjectNotClaimed(t *testing.T) {
	nsC, nsD := "identity-foreign-c", "identity-foreign-d"
	namespace(t, nsC)
	namespace(t, nsD)
	tenant(t, "team-c", nsC, configMapVerbs)
	repo := h.NewGuard(t, "identity-foreign", false, map[string]string{
		"c.yaml": configMap(nsC, "app", "1"),
		"d.yaml": configMap(nsD, "theirs", "from team-c's Git"),
	}, func(s *v1alpha1.GuardSpec) { s.ServiceAccountName = "team-c" })
	waitReady(t, repo.Guard, metav1.ConditionFalse, v1alpha1.ReasonForbidden, "may not patch (server-side apply) configmaps in namespace "+nsD)
	if v := value(t, nsC, "app"); v != "1" {
		t.Fatalf("%s/app: %s", nsC, v)
	}
	ownerCreates(t, nsD, "team-d's")
}

// ownerCreates: the team that owns namespace ns creates its own ConfigMap
// "theirs" there (want), which another team's Git also declares, and it
// stays as created. Each attempt of that Guard publishes its revision for
// as long as it applies (every retry): a create in that window is denied,
// and tried again; once created, what the other Git holds of it does not
// come back: no revert.
func ownerCreates(t *testing.T, ns, want string) {
	t.Helper()
	theirs := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "theirs"}, Data: map[string]string{"value": want}}
	wait.Eventually(t, 30*time.Second, "the namespace's team creates its own ConfigMap", func() error {
		return h.Admin.Create(context.Background(), theirs.DeepCopy())
	})
	time.Sleep(2 * time.Second)
	if v := value(t, ns, "theirs"); v != want {
		t.Fatalf("%s/theirs is %q", ns, v)
	}
}

// TestForeignObjectOfALaterWave: the same as TestForeignObjectNotClaimed
// for an object of a later wave, which a sync that stops at its first wave
// never tries: a Git that makes its first wave fail (here a ConfigMap the
// API server finds invalid) kept another team's object of the next wave
// claimed (team-f's create denied by the guard's webhook, naming team-e's
// Git) until 2026-12-05. The guard asks the API server in a dry run, as
// the Guard's account, and leaves what it refuses unclaimed.
func TestForeignObjectOfALaterWave(t *testing.T) {
	nsE, nsF := "identity-wave-e", "identity-wave-f"
	namespace(t, nsE)
	namespace(t, nsF)
	tenant(t, "team-e", nsE, configMapVerbs)
	wave := func(doc, w string) string {
		return strings.Replace(doc, "metadata:\n", "metadata:\n  annotations: {driftguard.io/sync-wave: \""+w+"\"}\n", 1)
	}
	repo := h.NewGuard(t, "identity-wave", false, map[string]string{
		"bad.yaml": wave("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: bad\n  namespace: "+nsE+"\ndata:\n  \"not a key!\": x\n", "0"),
		"f.yaml":   wave(configMap(nsF, "theirs", "from team-e's Git"), "1"),
	}, func(s *v1alpha1.GuardSpec) { s.ServiceAccountName = "team-e" })
	waitReady(t, repo.Guard, metav1.ConditionFalse, v1alpha1.ReasonApplyFailed, "the waves after it are not applied")
	ownerCreates(t, nsF, "team-f's")
}

// TestMissingServiceAccount: a Guard naming a service account that does not
// exist applies nothing and says so; creating the account is the fix. Its
// health reads act as the account too: a health check of a Secret the
// account may not read is Unknown, naming the account, where the guard
// itself could read it.
func TestMissingServiceAccount(t *testing.T) {
	ns := "identity-missing"
	namespace(t, ns)
	probe := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "probe"}, StringData: map[string]string{"k": "v"}}
	if err := h.Admin.Create(context.Background(), probe); err != nil {
		t.Fatal(err)
	}
	repo := h.NewGuard(t, "identity-missing", false, map[string]string{"a.yaml": configMap(ns, "app", "1")},
		func(s *v1alpha1.GuardSpec) {
			s.ServiceAccountName = "nobody"
			s.HealthChecks = []v1alpha1.ObjectReference{{APIVersion: "v1", Kind: "Secret", Namespace: ns, Name: "probe"}}
		})
	waitReady(t, repo.Guard, metav1.ConditionFalse, v1alpha1.ReasonServiceAccountNotFound,
		"spec.serviceAccountName: service account driftguard-system/nobody does not exist")
	if exists(t, &corev1.ConfigMap{}, ns, "app") {
		t.Fatal("applied although the Guard's service account does not exist")
	}
	tenant(t, "nobody", ns, configMapVerbs)
	h.WaitApplied(t, repo.Guard, repo.Initial)
	if v := value(t, ns, "app"); v != "1" {
		t.Fatalf("%s/app: %s", ns, v)
	}
	wait.Eventually(t, 30*time.Second, "the health check read as the account", func() error {
		g := h.Guard(t, repo.Guard)
		if g.Status.Health != string(health.Unknown) || !strings.Contains(fmt.Sprint(g.Status.Unhealthy), `User "system:serviceaccount:driftguard-system:nobody" cannot get resource "secrets"`) {
			return fmt.Errorf("health %s: %v", g.Status.Health, g.Status.Unhealthy)
		}
		return nil
	})
}

// TestDefaultServiceAccount: with --default-service-account, a Guard that
// names no service account acts as that one, and a refusal names the flag.
func TestDefaultServiceAccount(t *testing.T) {
	nsC, nsD := "identity-c", "identity-d"
	namespace(t, nsC)
	namespace(t, nsD)
	tenant(t, defaultAccount, nsC, append(configMapVerbs, "delete"))
	repo := h.NewGuard(t, "identity-default", true, map[string]string{
		"c.yaml":    configMap(nsC, "app", "1"),
		"gone.yaml": configMap(nsC, "gone", "1"),
		"d.yaml":    configMap(nsD, "steal", "1"),
	}, func(s *v1alpha1.GuardSpec) { s.Retry = quickRetry() })
	waitReady(t, repo.Guard, metav1.ConditionFalse, v1alpha1.ReasonForbidden,
		"service account driftguard-system/tenant-default (--default-service-account; user system:serviceaccount:driftguard-system:tenant-default)",
		"configmaps in namespace "+nsD)
	wait.Eventually(t, 30*time.Second, "C's object applied", func() error {
		if v := value(t, nsC, "app"); v != "1" {
			return fmt.Errorf("%s/app: %s", nsC, v)
		}
		return nil
	})
	if exists(t, &corev1.ConfigMap{}, nsD, "steal") {
		t.Fatalf("%s/steal created with rights the default service account does not have", nsD)
	}
	// A change in Git is an update of a managed object and a delete, made
	// as the account: neither the webhook nor the compiled policies stop it.
	rev := repo.Change(t, "change C, drop D", map[string]string{"c.yaml": configMap(nsC, "app", "2")}, "d.yaml", "gone.yaml")
	h.WaitApplied(t, repo.Guard, rev)
	if v := value(t, nsC, "app"); v != "2" {
		t.Fatalf("%s/app: %s", nsC, v)
	}
	if v := value(t, nsC, "gone"); v != "<missing>" {
		t.Fatalf("%s/gone not pruned: %s", nsC, v)
	}
}

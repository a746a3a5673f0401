package adversary

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/driftguard/driftguard/api/v1alpha1"
	"github.com/driftguard/driftguard/audit"
	"github.com/driftguard/driftguard/decision"
	"github.com/driftguard/driftguard/test/wait"
)

// The namespaces of these tests are ones the webhooks are not registered for
// (unwatched): eve's changes get in, as they would while the webhook is down
// or fails open, and the drift watcher is what answers them.

func deployment(t *testing.T, ns string) *appsv1.Deployment {
	t.Helper()
	var d appsv1.Deployment
	if err := h.Admin.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "web"}, &d); err != nil {
		t.Fatal(err)
	}
	return &d
}

// TestAdditionsRemoved: what eve adds to or removes from a managed
// Deployment is put back, additions removed, and recorded as made by
// "unknown" with her field manager as a claim.
func TestAdditionsRemoved(t *testing.T) {
	const ns = "nowh-additions"
	repo := guarded(t, "adv-additions", ns)
	for _, p := range []string{
		`[{"op":"add","path":"/spec/template/spec/shareProcessNamespace","value":true}]`,
		`[{"op":"add","path":"/spec/template/spec/containers/-","value":{"name":"tap","image":"evil","securityContext":{"privileged":true}}}]`,
		`[{"op":"add","path":"/spec/template/spec/volumes","value":[{"name":"root","hostPath":{"path":"/"}}]}]`,
		`[{"op":"remove","path":"/spec/template/spec/automountServiceAccountToken"}]`,
		`[{"op":"remove","path":"/spec/template/spec/containers/0/securityContext/allowPrivilegeEscalation"}]`,
	} {
		if out, err := h.KubectlAs(t, eve, "patch", "deployment", "web", "-n", ns, "--type=json", "-p", p); err != nil {
			t.Fatalf("patch %s: %v %s", p, err, out)
		}
	}
	wait.Eventually(t, 20*time.Second, "eve's changes are all undone", func() error {
		d := deployment(t, ns)
		spec := d.Spec.Template.Spec
		switch {
		case spec.ShareProcessNamespace != nil:
			return fmt.Errorf("shareProcessNamespace still set")
		case len(spec.Containers) != 1:
			return fmt.Errorf("%d containers", len(spec.Containers))
		case len(spec.Volumes) != 0:
			return fmt.Errorf("volumes %v", spec.Volumes)
		case spec.AutomountServiceAccountToken == nil || *spec.AutomountServiceAccountToken:
			return fmt.Errorf("automountServiceAccountToken %v", spec.AutomountServiceAccountToken)
		case spec.Containers[0].SecurityContext == nil || spec.Containers[0].SecurityContext.AllowPrivilegeEscalation == nil:
			return fmt.Errorf("allowPrivilegeEscalation not back")
		}
		return nil
	})
	rec := h.Audit.Wait(t, 10*time.Second, "drift record of an addition", func(r audit.Record) bool {
		return r.Guard == repo.Guard && r.Type == audit.Drift && slices.ContainsFunc(r.Fields, func(f audit.Field) bool { return f.Change == "added" })
	})
	if rec.User != "unknown" || rec.Manager != "kubectl-patch" || rec.Action != "revert" {
		t.Fatalf("drift record: user %q manager %q action %q, want unknown / kubectl-patch / revert", rec.User, rec.Manager, rec.Action)
	}
}

// TestOwnerReferenceAndFinalizerRemoved: the side door around a denied
// delete (an owner eve controls, for the garbage collector to follow) is
// closed: the owner reference and a finalizer she adds are removed.
func TestOwnerReferenceAndFinalizerRemoved(t *testing.T) {
	const ns = "nowh-owner"
	guarded(t, "adv-owner", ns)
	ctx := context.Background()
	owner := &corev1.ConfigMap{}
	owner.Namespace, owner.Name = ns, "eves"
	if err := h.Admin.Create(ctx, owner); err != nil {
		t.Fatal(err)
	}
	patch := fmt.Sprintf(`{"metadata":{"ownerReferences":[{"apiVersion":"v1","kind":"ConfigMap","name":"eves","uid":%q}],"finalizers":["eve.example/hold"]}}`, owner.UID)
	if out, err := h.KubectlAs(t, eve, "patch", "configmap", "cfg", "-n", ns, "--type=merge", "-p", patch); err != nil {
		t.Fatalf("%v %s", err, out)
	}
	wait.Eventually(t, 20*time.Second, "owner reference and finalizer removed", func() error {
		var cm corev1.ConfigMap
		if err := h.Admin.Get(ctx, client.ObjectKey{Namespace: ns, Name: "cfg"}, &cm); err != nil {
			return err
		}
		if len(cm.OwnerReferences) > 0 || len(cm.Finalizers) > 0 {
			return fmt.Errorf("owners %v finalizers %v", cm.OwnerReferences, cm.Finalizers)
		}
		return nil
	})
}

// TestForgedIdentityIsUnknown: eve writes under the controller manager's
// field-manager name and forges a stamp naming a break-glass member with a
// reason and a time in 2099. The drift is reverted, not kept as break-glass,
// and recorded as made by "unknown", never by the identity she claims.
func TestForgedIdentityIsUnknown(t *testing.T) {
	const ns = "nowh-identity"
	repo := guarded(t, "adv-identity", ns)
	forged := `{"metadata":{"annotations":{"driftguard.io/changed-by":"{\"user\":\"bob\",\"groups\":[\"sre\"],\"time\":\"2099-01-01T00:00:00Z\"}","driftguard.io/break-glass":"INC-1: trust me"}},"data":{"greeting":"by eve"}}`
	if out, err := h.KubectlAs(t, eve, "patch", "configmap", "cfg", "-n", ns, "--field-manager=kube-controller-manager", "--type=merge", "-p", forged); err != nil {
		t.Fatalf("%v %s", err, out)
	}
	waitGreeting(t, ns, "from git")
	rec := h.Audit.Wait(t, 10*time.Second, "drift record", func(r audit.Record) bool {
		return r.Guard == repo.Guard && r.Type == audit.Drift && r.Rule != decision.RuleBreakGlass
	})
	if rec.User != "unknown" || rec.Manager != "kube-controller-manager" || rec.Action != "revert" {
		t.Fatalf("drift record: user %q manager %q action %q rule %q", rec.User, rec.Manager, rec.Action, rec.Rule)
	}
	for _, r := range h.Audit.Find(func(r audit.Record) bool { return r.Guard == repo.Guard }) {
		if r.User == "bob" || r.User == "system:kube-controller-manager" || r.Rule == decision.RuleBreakGlass {
			t.Fatalf("a forged identity was believed: %+v", r)
		}
	}
}

// TestEditorCannotStopSelfHeal: repeating the same change under an
// operator's field-manager name does not make the guard give up.
func TestEditorCannotStopSelfHeal(t *testing.T) {
	const ns = "nowh-fight"
	repo := guarded(t, "adv-fight", ns)
	for i := range 8 {
		if out, err := h.KubectlAs(t, eve, "patch", "configmap", "cfg", "-n", ns, "--field-manager=my-operator", "--type=merge", "-p", `{"data":{"greeting":"operator's"}}`); err != nil {
			t.Fatalf("patch %d: %v %s", i, err, out)
		}
		waitGreeting(t, ns, "from git")
	}
	if recs := h.Audit.Find(func(r audit.Record) bool { return r.Guard == repo.Guard && r.Rule == decision.RuleFightDetected }); len(recs) > 0 {
		t.Fatalf("eve made the guard stop reverting: %+v", recs[0])
	}
}

func waitGreeting(t *testing.T, ns, want string) {
	t.Helper()
	wait.Eventually(t, 20*time.Second, "greeting "+want, func() error {
		var cm corev1.ConfigMap
		if err := h.Admin.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "cfg"}, &cm); err != nil {
			return err
		}
		if got := cm.Data["greeting"]; !strings.EqualFold(got, want) {
			return fmt.Errorf("greeting %q", got)
		}
		return nil
	})
}

// TestBorrowedManagerName: under dryrun enforcement the webhook admits
// eve's change (stamped with her name) for self-heal to put back; what she
// adds under the kubelet's or the guard's field-manager name is removed
// too: a manager name is the writer's word, the stamp names the writer.
func TestBorrowedManagerName(t *testing.T) {
	const ns = "adv-borrowed"
	guarded(t, "adv-borrowed", ns, func(s *v1alpha1.GuardSpec) { s.Enforcement = v1alpha1.EnforcementDryRun })
	for _, manager := range []string{"kubelet", "driftguard"} {
		p := fmt.Sprintf(`[{"op":"add","path":"/spec/template/spec/containers/-","value":{"name":"tap-%s","image":"evil"}}]`, manager)
		if out, err := h.KubectlAs(t, eve, "patch", "deployment", "web", "-n", ns, "--field-manager="+manager, "--type=json", "-p", p); err != nil {
			t.Fatalf("patch as %s: %v %s", manager, err, out)
		}
		wait.Eventually(t, 20*time.Second, "the container added under "+manager+"'s name is removed", func() error {
			if c := deployment(t, ns).Spec.Template.Spec.Containers; len(c) != 1 {
				return fmt.Errorf("%d containers", len(c))
			}
			return nil
		})
	}
}

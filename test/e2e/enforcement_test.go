package e2e

import (
	"fmt"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/driftguard/driftguard/api/v1alpha1"
	"github.com/driftguard/driftguard/audit"
	"github.com/driftguard/driftguard/decision"
	"github.com/driftguard/driftguard/test/wait"
)

func patchValue(value string) []string {
	return []string{"--type=merge", "-p", fmt.Sprintf(`{"data":{"value":%q}}`, value)}
}

// TestWarnEnforcementAdmitsWithWarningAndReverts: with enforcement warn the
// change is admitted, kubectl prints the warning, and the informer reverts
// it, recording the person the mutating webhook stamped. The mutating
// webhook decided the change; the validating one, seeing the stamp of that
// request, was not called: one decision record.
func TestWarnEnforcementAdmitsWithWarningAndReverts(t *testing.T) {
	t.Parallel()
	const ns = "warn"
	repo := h.NewGuard(t, "warn", true, map[string]string{"ns.yaml": namespace(ns), "cm.yaml": configMap(ns, "cm", "git")},
		func(s *v1alpha1.GuardSpec) { s.Enforcement = v1alpha1.EnforcementWarn })
	h.WaitApplied(t, repo.Guard, repo.Initial)
	out, err := h.Kubectl(t, append([]string{"patch", "configmap", "cm", "-n", ns}, patchValue("by alice")...)...)
	if err != nil {
		t.Fatalf("warn enforcement denied: %s", out)
	}
	if !strings.Contains(out, "Warning:") || !strings.Contains(out, "managed by Git") || !strings.Contains(out, "cm.yaml") {
		t.Fatalf("kubectl printed no driftguard warning: %s", out)
	}
	waitValue(t, ns, "cm", "git")
	rec := h.Audit.Wait(t, 10*time.Second, "drift by alice", func(r audit.Record) bool {
		return r.Type == audit.Drift && r.Guard == repo.Guard && r.Object.Name == "cm"
	})
	if rec.User != "alice" || rec.Manager != "kubectl-patch" {
		t.Fatalf("drift record must name the person (stamp) and the manager: user %q manager %q", rec.User, rec.Manager)
	}
	decisions := h.Audit.Find(func(r audit.Record) bool {
		return r.Type == audit.Decision && r.Guard == repo.Guard && r.Object.Name == "cm"
	})
	if len(decisions) != 1 || decisions[0].Action != "warn" || decisions[0].User != "alice" || decisions[0].RequestUID == "" {
		t.Fatalf("want one warn decision by alice for the patch, got %+v", decisions)
	}
}

// TestDryRunEnforcementRecordsWhatWouldBeDenied: dryrun admits silently and
// records the decision.
func TestDryRunEnforcementRecordsWhatWouldBeDenied(t *testing.T) {
	t.Parallel()
	const ns = "dryrun"
	repo := h.NewGuard(t, "dryrun", true, map[string]string{"ns.yaml": namespace(ns), "cm.yaml": configMap(ns, "cm", "git")},
		func(s *v1alpha1.GuardSpec) { s.Enforcement = v1alpha1.EnforcementDryRun })
	h.WaitApplied(t, repo.Guard, repo.Initial)
	out, err := h.Kubectl(t, append([]string{"patch", "configmap", "cm", "-n", ns}, patchValue("x")...)...)
	if err != nil || strings.Contains(out, "Warning") {
		t.Fatalf("dryrun must admit without warning: %v %s", err, out)
	}
	rec := h.Audit.Wait(t, 10*time.Second, "dryrun decision", func(r audit.Record) bool {
		return r.Type == audit.Decision && r.Guard == repo.Guard
	})
	if rec.Rule != decision.RuleManagedByGit || !strings.Contains(rec.Reason, "dryrun") || rec.User != "alice" {
		t.Fatalf("decision record must say what would have been denied: %+v", rec)
	}
	waitValue(t, ns, "cm", "git")
}

// TestEnforcementOffInGit: an object annotated driftguard.io/enforcement: off
// in Git may be changed by hand and is not reverted.
func TestEnforcementOffInGit(t *testing.T) {
	t.Parallel()
	const ns = "enforce-off"
	cm := strings.Replace(configMap(ns, "cm", "git"), "  namespace: "+ns+"\n", "  namespace: "+ns+"\n  annotations:\n    driftguard.io/enforcement: \"off\"\n", 1)
	repo := h.NewGuard(t, "enforce-off", true, map[string]string{"ns.yaml": namespace(ns), "cm.yaml": cm})
	h.WaitApplied(t, repo.Guard, repo.Initial)
	if out, err := h.Kubectl(t, append([]string{"patch", "configmap", "cm", "-n", ns}, patchValue("hand")...)...); err != nil {
		t.Fatalf("enforcement off must admit: %s", out)
	}
	h.Audit.Wait(t, 10*time.Second, "accepted drift", func(r audit.Record) bool {
		return r.Type == audit.Drift && r.Guard == repo.Guard && r.Rule == decision.RuleEnforcementOff && r.Action == "allow"
	})
	waitValue(t, ns, "cm", "hand")
}

// TestBreakGlass: a member of the break-glass group who gives a reason in the
// same edit is admitted, recorded with the reason, and reverted after the TTL.
func TestBreakGlass(t *testing.T) {
	t.Parallel()
	const ns = "break-glass"
	repo := h.NewGuard(t, "break-glass", true, map[string]string{"ns.yaml": namespace(ns), "cm.yaml": configMap(ns, "cm", "git")},
		func(s *v1alpha1.GuardSpec) { s.BreakGlassTTL = &metav1.Duration{Duration: 4 * time.Second} })
	h.WaitApplied(t, repo.Guard, repo.Initial)
	sam, _, err := h.Cluster.AddUser("sam", []string{"system:masters", "sre"})
	if err != nil {
		t.Fatal(err)
	}
	edit := `{"metadata":{"annotations":{"driftguard.io/break-glass":"INC-42: hotfix"}},"data":{"value":"hotfix"}}`

	// Alice is not in the break-glass group: the reason does not help her.
	if out, err := h.Kubectl(t, "patch", "configmap", "cm", "-n", ns, "--type=merge", "-p", edit); err == nil {
		t.Fatalf("break-glass by a non-member was admitted: %s", out)
	}
	if out, err := h.KubectlAs(t, sam, "patch", "configmap", "cm", "-n", ns, "--type=merge", "-p", edit); err != nil {
		t.Fatalf("break-glass by sam denied: %s", out)
	}
	start := time.Now()
	dec := h.Audit.Wait(t, 10*time.Second, "break-glass decision", func(r audit.Record) bool {
		return r.Type == audit.Decision && r.Guard == repo.Guard && r.Rule == decision.RuleBreakGlass
	})
	if dec.User != "sam" || dec.Action != "allow" || !strings.Contains(dec.Reason, "INC-42") {
		t.Fatalf("break-glass decision must name user and reason: %+v", dec)
	}
	h.Audit.Wait(t, 10*time.Second, "break-glass drift kept", func(r audit.Record) bool {
		return r.Type == audit.Drift && r.Guard == repo.Guard && r.Rule == decision.RuleBreakGlass && r.User == "sam"
	})
	waitValue(t, ns, "cm", "git") // after the TTL
	if time.Since(start) < 3*time.Second {
		t.Fatalf("break-glass change reverted after %s, before its TTL", time.Since(start))
	}
	h.Audit.Wait(t, 10*time.Second, "revert after TTL", func(r audit.Record) bool {
		return r.Type == audit.Revert && r.Guard == repo.Guard && r.Rule == decision.RuleBreakGlassExpired
	})
	wait.Eventually(t, 10*time.Second, "break-glass annotation cleared", func() error {
		cm, err := getConfigMap(t, ns, "cm")
		if err != nil {
			return err
		}
		if _, ok := cm.Annotations[v1alpha1.BreakGlassAnnotation]; ok {
			return fmt.Errorf("annotations %v", cm.Annotations)
		}
		return nil
	})
}

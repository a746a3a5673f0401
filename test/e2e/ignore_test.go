package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"

	"github.com/driftguard/driftguard/api/v1alpha1"
	"github.com/driftguard/driftguard/test/wait"
)

// TestIgnoredFieldsAreNotFoughtOver: a field an ignore rule hides may be
// changed (here by a scale, as an HPA would): the webhook admits it, and
// neither self-heal nor the full reconcile takes it back, while other fields
// stay guarded.
func TestIgnoredFieldsAreNotFoughtOver(t *testing.T) {
	t.Parallel()
	const ns = "ignore"
	repo := h.NewGuard(t, "ignore", true, map[string]string{"ns.yaml": namespace(ns), "web.yaml": deployment(ns, "web", 2), "cm.yaml": configMap(ns, "cm", "git")},
		func(s *v1alpha1.GuardSpec) {
			s.Ignore = []v1alpha1.IgnoreRule{{Group: "apps", Kind: "Deployment", JSONPointers: []string{"/spec/replicas"}}}
		})
	h.WaitApplied(t, repo.Guard, repo.Initial)
	if out, err := h.Kubectl(t, "scale", "deploy/web", "--replicas=7", "-n", ns); err != nil {
		t.Fatalf("scale of an ignored field denied: %s", out)
	}
	if out, err := h.Kubectl(t, "set", "image", "deploy/web", "app=nginx:evil", "-n", ns); err == nil {
		t.Fatalf("image change admitted though only replicas are ignored: %s", out)
	}
	// A new commit elsewhere forces a full apply of every object; the scale still stands.
	rev := repo.Change(t, "touch cm", map[string]string{"cm.yaml": configMap(ns, "cm", "git2")})
	h.WaitApplied(t, repo.Guard, rev)
	waitValue(t, ns, "cm", "git2")
	out, err := h.Kubectl(t, "get", "deploy/web", "-n", ns, "-o", "jsonpath={.spec.replicas}")
	if err != nil || out != "7" {
		t.Fatalf("ignored replicas taken back: %q %v", out, err)
	}
}

// TestRemovedIgnoreRuleTakesTheFieldBack: a full reconcile that found an
// object in sync keeps that verdict while the object stays as it is; the
// verdict was made under the Guard's ignore rules, so once the rule that
// hid a changed field is removed, the next reconcile puts Git's value back
// (no event of the object's tells self-heal).
func TestRemovedIgnoreRuleTakesTheFieldBack(t *testing.T) {
	t.Parallel()
	const ns = "ignore-removed"
	repo := h.NewGuard(t, "ignore-removed", true, map[string]string{"ns.yaml": namespace(ns), "web.yaml": deployment(ns, "web", 2), "cm.yaml": configMap(ns, "cm", "git")},
		func(s *v1alpha1.GuardSpec) {
			s.Ignore = []v1alpha1.IgnoreRule{{Group: "apps", Kind: "Deployment", JSONPointers: []string{"/spec/replicas"}}}
		})
	h.WaitApplied(t, repo.Guard, repo.Initial)
	if out, err := h.Kubectl(t, "scale", "deploy/web", "--replicas=7", "-n", ns); err != nil {
		t.Fatalf("scale of an ignored field denied: %s", out)
	}
	// Two full reconciles over the scaled Deployment: in sync under the rule.
	for i, v := range []string{"git2", "git3"} {
		rev := repo.Change(t, fmt.Sprintf("touch cm %d", i), map[string]string{"cm.yaml": configMap(ns, "cm", v)})
		h.WaitApplied(t, repo.Guard, rev)
	}
	replicas := func() (string, error) {
		return h.Kubectl(t, "get", "deploy/web", "-n", ns, "-o", "jsonpath={.spec.replicas}")
	}
	if out, err := replicas(); err != nil || out != "7" {
		t.Fatalf("ignored replicas taken back: %q %v", out, err)
	}
	g := h.Guard(t, repo.Guard)
	g.Spec.Ignore = nil
	if err := h.Admin.Update(context.Background(), g); err != nil {
		t.Fatal(err)
	}
	wait.Eventually(t, 30*time.Second, "replicas back to Git's 2 once the rule is gone", func() error {
		if out, err := replicas(); err != nil || out != "2" {
			return fmt.Errorf("replicas %q %v", out, err)
		}
		return nil
	})
}

// TestBadIgnoreRuleStallsTheGuard: a rule that does not parse names the Guard
// and the rule.
func TestBadIgnoreRuleStallsTheGuard(t *testing.T) {
	t.Parallel()
	repo := h.NewGuard(t, "bad-rule", true, map[string]string{"cm.yaml": configMap("default", "bad-rule", "git")},
		func(s *v1alpha1.GuardSpec) {
			s.Ignore = []v1alpha1.IgnoreRule{{JSONPointers: []string{"/ok"}}, {JQPathExpressions: []string{".spec["}}}
		})
	wait.Eventually(t, 30*time.Second, "guard stalls on the bad rule", func() error {
		g := h.Guard(t, repo.Guard)
		c := meta.FindStatusCondition(g.Status.Conditions, v1alpha1.ConditionStalled)
		if c == nil || c.Reason != v1alpha1.ReasonInvalidIgnoreRule {
			return fmt.Errorf("conditions %+v", g.Status.Conditions)
		}
		if !strings.Contains(c.Message, "bad-rule") || !strings.Contains(c.Message, "ignore[1].jqPathExpressions[0]") {
			return fmt.Errorf("message does not name guard and rule: %s", c.Message)
		}
		return nil
	})
}

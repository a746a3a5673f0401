package decision

import (
	"regexp"
	"slices"
	"testing"

	"github.com/driftguard/driftguard/policy"
)

// TestDefaultPolicyRules checks that the rules the default policy names are
// the Rule constants of the default policy, in the order of its else chain:
// a rule renamed in the Rego without its constant (or the other way round)
// fails here.
func TestDefaultPolicyRules(t *testing.T) {
	src, ok := policy.DefaultModules()["decision.rego"]
	if !ok {
		t.Fatal("the default policy has no decision.rego")
	}
	var named []string
	for _, m := range regexp.MustCompile(`"rule":\s*"([^"]+)"`).FindAllStringSubmatch(src, -1) {
		named = append(named, m[1])
	}
	want := []string{RuleGuardIdentity, RuleSystemController, RuleBreakGlass, RuleRestoresGit, RuleSelfHeal, RuleOrphan, RuleManagedByGit}
	if !slices.Equal(named, want) {
		t.Errorf("default policy names rules %q, the constants are %q", named, want)
	}
}

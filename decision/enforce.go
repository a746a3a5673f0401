package decision

import (
	"github.com/driftguard/driftguard/api/v1alpha1"
	"github.com/driftguard/driftguard/policy"
)

// Enforcement is what softens a policy's deny: the object's
// driftguard.io/enforcement annotation in Git (off, revert, warn, deny or
// empty) and the Guard's spec.enforcement (deny, warn, dryrun; empty is deny).
type Enforcement struct {
	Object string
	Guard  string
}

// off reports whether the object's enforcement is off in Git.
func (e Enforcement) off() bool { return e.Object == "off" }

// offResult is the decision for a change of an object whose enforcement is off.
func offResult() Result {
	return Result{Action: policy.Allow, Rule: RuleEnforcementOff, Reason: "enforcement off for this object in Git"}
}

// enforce applies e to the policy's decision d of a change at admission
// (afterTheFact false) or seen after it (true), and returns the result.
// Only a deny is softened, and only at admission: after the fact a deny
// reverts in every mode.
func (e Enforcement) enforce(d policy.Decision, afterTheFact bool) Result {
	r := Result{Action: d.Action, Rule: d.Rule, Reason: d.Reason,
		Temporary: d.Temporary && (d.Action == policy.Allow || d.Action == policy.Warn)}
	if d.Action != policy.Deny || afterTheFact {
		return r
	}
	soften := func(a policy.Action, why string) Result {
		return Result{Action: a, Rule: d.Rule, Reason: d.Reason + " (" + why + ")", PolicyAction: d.Action}
	}
	switch e.Object {
	case "off": // decided before the policy; kept for callers of enforce alone
		return soften(policy.Allow, "enforcement off for this object in Git")
	case "revert":
		return soften(policy.Revert, "admitted and reverted: enforcement revert in Git")
	case "warn":
		return soften(policy.Warn, "enforcement warn in Git")
	case "deny":
		return r
	}
	switch v1alpha1.Enforcement(e.Guard) {
	case v1alpha1.EnforcementWarn:
		return soften(policy.Warn, "guard enforcement warn")
	case v1alpha1.EnforcementDryRun:
		return soften(policy.Revert, "would be denied; guard enforcement dryrun admitted it")
	}
	return r
}

// EnforcementOf reads the enforcement a policy input carries: the
// annotation of input.desired and input.guardSpec.enforcement. It is for
// tools that decide a recorded or hand-written input (policy eval).
func EnforcementOf(in policy.Input) Enforcement {
	var e Enforcement
	md, _ := in.Desired["metadata"].(map[string]any)
	ann, _ := md["annotations"].(map[string]any)
	e.Object, _ = ann[v1alpha1.EnforcementAnnotation].(string)
	e.Guard, _ = in.GuardSpec["enforcement"].(string)
	return e
}

// AtAdmission is what a deny of the default policy becomes at admission
// under e: policy.Deny, policy.Warn, policy.Revert (admitted, put back
// after) or policy.Allow (enforcement off). The compiled admission policies
// (package compiled) are built from it, so they soften a deny exactly as
// Decide does.
func (e Enforcement) AtAdmission() policy.Action {
	if e.off() {
		return policy.Allow
	}
	return e.enforce(policy.Decision{Action: policy.Deny}, false).Action
}

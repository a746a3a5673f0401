package decision

// Rules of the default policy (policy/default/decision.rego), in the order
// its else chain tries them. A policy names the rule that decided in its
// answer; these are the names the default policy gives. Audit records and
// the metric driftguard_admission_decisions_total carry them.
const (
	// RuleGuardIdentity: the change is the guard's own (its identities): allow.
	RuleGuardIdentity = "guard-identity"
	// RuleSystemController: a control-plane component updates or scales;
	// only the namespace controller and the controller manager delete: allow.
	RuleSystemController = "system-controller"
	// RuleBreakGlass: a member of a break-glass group with a break-glass
	// reason annotation: allow, kept for the Guard's breakGlassTTL.
	RuleBreakGlass = "break-glass"
	// RuleRestoresGit: an update that only writes back values Git sets: allow.
	RuleRestoresGit = "restores-git"
	// RuleSelfHeal: drift seen after the fact: revert. Self-heal without a
	// policy reverts under this rule too.
	RuleSelfHeal = "self-heal"
	// RuleOrphan: the CREATE of an object Git does not have in a namespace
	// a Guard owns: warn.
	RuleOrphan = "orphan"
	// RuleManagedByGit: any other change of an object Git manages: deny.
	RuleManagedByGit = "managed-by-git"
)

// Rules the guard decides by itself, without asking the policy, and names
// in its audit records.
const (
	// RuleEnforcementOff is the rule of a change allowed because its object
	// is annotated driftguard.io/enforcement: off in Git; the policy was not
	// asked.
	RuleEnforcementOff = "enforcement-off"
	// RuleFailurePolicy is the rule of an admission the webhook could not
	// decide (the policy failed or timed out): --failure-policy answers.
	RuleFailurePolicy = "failure-policy"
	// RulePolicyError is the rule of a drift the policy failed to decide:
	// self-heal reverts it.
	RulePolicyError = "policy-error"
	// RuleBreakGlassExpired is the rule of the revert of a temporary change
	// (break-glass) whose breakGlassTTL ran out while Git did not adopt it.
	RuleBreakGlassExpired = "break-glass-expired"
	// RuleFightDetected is the rule of the error record self-heal writes when
	// it stops reverting an object another field manager keeps changing
	// back.
	RuleFightDetected = "fight-detected"
)

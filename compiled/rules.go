package compiled

import "github.com/driftguard/driftguard/decision"

// RuleReport says how one rule of the default policy is enforced with
// --admission-mode=both or compiled (driftguard policy check prints it).
type RuleReport struct {
	Rule string
	// Compiled: the API server decides it by itself, also while the guard
	// is down; otherwise only the webhook (or self-heal) does.
	Compiled bool
	How      string
}

// DefaultRules reports the default policy (policy/default/decision.rego),
// rule by rule; docs/policy.md says the same at length.
func DefaultRules() []RuleReport {
	return []RuleReport{
		{decision.RuleGuardIdentity, true, "the first term of every validation: the guard's identities and its namespace's service accounts are always admitted"},
		{decision.RuleSystemController, true, "the second term of every validation: control-plane identities update and scale; only the namespace controller and the controller manager delete"},
		{decision.RuleBreakGlass, true, "a member of --break-glass-groups with a non-empty driftguard.io/break-glass annotation is admitted; the guard reverts after breakGlassTTL once it is up"},
		{decision.RuleRestoresGit, false, "the compiled layer holds no Git values: an update writing Git's values back onto an object that differs from Git is denied (only a break-glass change can make it differ while the guard is down)"},
		{decision.RuleSelfHeal, false, "after the fact (drift), not an admission: the guard's drift watcher"},
		{decision.RuleOrphan, false, "a CREATE: the webhook warns while the guard is up"},
		{decision.RuleManagedByGit, true, "deny (or warn, by enforcement) an update, delete or scale of an indexed object that changes anything its ignore rules do not hide; updates by users of managedFieldsManagers rules, objects whose ignore rules point into a list and objects whose names hold characters but letters, digits and . - _ : @ + are the webhook's"},
	}
}

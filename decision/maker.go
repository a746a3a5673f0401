package decision

import (
	"context"
	"errors"
	"fmt"

	"github.com/driftguard/driftguard/policy"
)

// Policy is the Rego policy asked about a change (a *policy.Engine).
type Policy interface {
	Decide(ctx context.Context, in policy.Input) (policy.Decision, error)
}

// Guards tells, per Guard, how it enforces and what its policy sees.
type Guards interface {
	// Enforcement is the Guard's spec.enforcement: deny, warn or dryrun.
	Enforcement(guard string) string
	// PolicyData is the Guard's spec.policyData.
	PolicyData(guard string) map[string]string
	// GuardSpec is the Guard's spec as JSON decodes it.
	GuardSpec(guard string) map[string]any
}

// ErrNoPolicy is returned by a Maker without a policy.
var ErrNoPolicy = errors.New("no policy configured")

// Result is what happens to a change.
type Result struct {
	// Action is what is done: deny, revert, allow or warn.
	Action policy.Action `json:"action"`
	Reason string        `json:"reason"`
	Rule   string        `json:"rule,omitempty"`
	// PolicyAction is the policy's own action when enforcement changed it.
	PolicyAction policy.Action `json:"policyAction,omitempty"`
	// Temporary: the change is kept only for the Guard's breakGlassTTL,
	// then reverted unless Git adopted it.
	Temporary bool `json:"temporary,omitempty"`
	// Input is what the policy was (or, under enforcement off, would have
	// been) asked; set also when Decide fails, for the record.
	Input policy.Input `json:"-"`
}

// Decision is the result as a policy decision (action, reason, rule).
func (r Result) Decision() policy.Decision {
	return policy.Decision{Action: r.Action, Reason: r.Reason, Rule: r.Rule, Temporary: r.Temporary}
}

// Maker decides changes with one policy for every Guard.
type Maker struct {
	policy Policy
	guards Guards
}

// New returns a Maker asking p, with the settings of guards (nil: every
// Guard denies, without policy data or spec).
func New(p Policy, guards Guards) *Maker {
	return &Maker{policy: p, guards: guards}
}

// Decide decides c in the order the package documents. On error (the
// policy failed: "policy error: ...", or ErrNoPolicy) the Result holds only
// the Input, for the caller's record.
func (m *Maker) Decide(ctx context.Context, c Change) (Result, error) {
	in := c.input(m.guards)
	e := Enforcement{Object: c.objectEnforcement()}
	if m.guards != nil {
		e.Guard = m.guards.Enforcement(c.Guard)
	}
	return m.decide(ctx, in, e, c.afterTheFact())
}

// DecideInput decides a ready input with the given enforcement, as Decide
// does after building the input: for tools that decide recorded or
// hand-written inputs (policy eval, policy replay).
func (m *Maker) DecideInput(ctx context.Context, in policy.Input, e Enforcement) (Result, error) {
	return m.decide(ctx, in, e, in.Operation == Drift)
}

func (m *Maker) decide(ctx context.Context, in policy.Input, e Enforcement, afterTheFact bool) (Result, error) {
	if e.off() {
		r := offResult()
		r.Input = in
		return r, nil
	}
	if m.policy == nil {
		return Result{Input: in}, ErrNoPolicy
	}
	d, err := m.policy.Decide(ctx, in)
	if err != nil {
		return Result{Input: in}, fmt.Errorf("policy error: %w", err)
	}
	r := e.enforce(d, afterTheFact)
	r.Input = in
	return r, nil
}

package decision

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/driftguard/driftguard/api/v1alpha1"
	"github.com/driftguard/driftguard/drift"
	"github.com/driftguard/driftguard/policy"
	"github.com/driftguard/driftguard/render"
)

const (
	guardUser = "system:serviceaccount:driftguard-system:driftguard"
	kcm       = "system:kube-controller-manager"
	gc        = "system:serviceaccount:kube-system:generic-garbage-collector"
)

// guards is a fake of the Guards' settings: the mode of every Guard.
type guards struct{ mode string }

func (g guards) Enforcement(string) string { return g.mode }
func (g guards) PolicyData(guard string) map[string]string {
	return map[string]string{"team": "payments-" + guard}
}
func (g guards) GuardSpec(string) map[string]any {
	return map[string]any{"enforcement": g.mode, "url": "https://git.example/infra.git"}
}

// desired is a Deployment as Git declares it, with the enforcement
// annotation when enforcement is not empty.
func desired(enforcement string) *render.Object {
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apps/v1", "kind": "Deployment",
		"metadata": map[string]any{"name": "web", "namespace": "shop"},
		"spec":     map[string]any{"replicas": int64(3)},
	}}
	if enforcement != "" {
		u.SetAnnotations(map[string]string{v1alpha1.EnforcementAnnotation: enforcement})
	}
	return render.NewObject(u, render.Source{URL: "https://git.example/infra.git", Revision: "9f2c1e0", Path: "apps/web.yaml", Line: 1})
}

// change is a change of shop/web's replicas from 3 to 5 by user.
func change(op, user string, groups ...string) Change {
	obj := map[string]any{"metadata": map[string]any{"name": "web", "namespace": "shop"}, "spec": map[string]any{"replicas": int64(5)}}
	return Change{
		Operation: op, User: user, Groups: groups,
		Resource: policy.Resource{Group: "apps", Version: "v1", Kind: "Deployment", Namespace: "shop", Name: "web"},
		Object:   obj,
		Changes:  []drift.Change{{Path: "/spec/replicas", Desired: int64(3), Live: int64(5), Old: int64(3)}},
		Guard:    "shop",
	}
}

func breakGlass(c Change, reason string) Change {
	md := c.Object["metadata"].(map[string]any)
	md["annotations"] = map[string]any{v1alpha1.BreakGlassAnnotation: reason}
	return c
}

func scale(c Change) Change {
	c.SubResource = "scale"
	return c
}

func gone(c Change) Change {
	c.Gone, c.Object = true, nil
	return c
}

func orphan(c Change) Change {
	c.Orphan, c.Changes = true, nil
	return c
}

// Custom policies.
const (
	// renamed calls break-glass "emergency" and marks it temporary.
	renamed = `package driftguard

decision := {"action": "allow", "reason": "emergency", "rule": "emergency", "temporary": true} if {
	"sre" in input.user.groups
} else := {"action": "revert", "reason": "drift", "rule": "self-heal"} if {
	input.operation == "DRIFT"
} else := {"action": "deny", "reason": "no", "rule": "managed-by-git"}
`
	// oldName keeps the name break-glass without temporary: nothing is kept
	// for a time because of a name.
	oldName = `package driftguard

decision := {"action": "allow", "reason": "kept", "rule": "break-glass"}
`
	// denyAll denies everything, drift included, and says temporary on a
	// deny (which means nothing).
	denyAll = `package driftguard

decision := {"action": "deny", "reason": "no", "rule": "deny-all", "temporary": true}
`
	revertAll = `package driftguard

decision := {"action": "revert", "reason": "back", "rule": "revert-all"}
`
	// broken yields no decision: a policy error.
	broken = `package driftguard

decision := {"action": "allow"} if false
`
)

// TestDecide decides changes by every kind of user, operation and
// enforcement end to end: input, policy, enforcement, result.
func TestDecide(t *testing.T) {
	tests := []struct {
		name   string
		policy string // "" is the default policy
		mode   string // the Guard's spec.enforcement
		annot  string // the object's driftguard.io/enforcement in Git
		change Change

		action       policy.Action
		rule         string
		policyAction policy.Action
		temporary    bool
		reason       string // a part of the reason
		err          string // a part of the error
	}{
		// Users, default policy, Guard mode deny.
		{name: "guard identity updates", mode: "deny", change: change(Update, guardUser), action: policy.Allow, rule: RuleGuardIdentity},
		{name: "guard identity deletes", mode: "deny", change: change(Delete, guardUser), action: policy.Allow, rule: RuleGuardIdentity},
		{name: "controller manager updates", mode: "deny", change: change(Update, kcm), action: policy.Allow, rule: RuleSystemController},
		{name: "controller manager scales", mode: "deny", change: scale(change(Update, kcm)), action: policy.Allow, rule: RuleSystemController},
		{name: "controller manager deletes (namespace controller)", mode: "deny", change: change(Delete, kcm), action: policy.Allow, rule: RuleSystemController},
		{name: "garbage collector deletes", mode: "deny", change: change(Delete, gc), action: policy.Deny, rule: RuleManagedByGit},
		{name: "garbage collector updates", mode: "deny", change: change(Update, gc), action: policy.Allow, rule: RuleSystemController},
		{name: "break-glass with reason", mode: "deny", change: breakGlass(change(Update, "sam", "sre"), "INC-42: hotfix"), action: policy.Allow, rule: RuleBreakGlass, temporary: true, reason: "INC-42"},
		{name: "break-glass without reason", mode: "deny", change: breakGlass(change(Update, "sam", "sre"), "  "), action: policy.Deny, rule: RuleManagedByGit},
		{name: "reason without membership", mode: "deny", change: breakGlass(change(Update, "alice", "system:masters"), "INC-42"), action: policy.Deny, rule: RuleManagedByGit},
		{name: "break-glass seen as drift", mode: "deny", change: breakGlass(change(Drift, "sam", "sre"), "INC-42"), action: policy.Allow, rule: RuleBreakGlass, temporary: true},
		{name: "person updates", mode: "deny", change: change(Update, "alice", "dev"), action: policy.Deny, rule: RuleManagedByGit},
		{name: "person creates what Git has", mode: "deny", change: change(Create, "alice"), action: policy.Deny, rule: RuleManagedByGit},
		{name: "person deletes", mode: "deny", change: change(Delete, "alice"), action: policy.Deny, rule: RuleManagedByGit},
		{name: "person scales", mode: "deny", change: scale(change(Update, "alice")), action: policy.Deny, rule: RuleManagedByGit},
		{name: "person creates an orphan", mode: "deny", change: orphan(change(Create, "alice")), action: policy.Warn, rule: RuleOrphan},
		{name: "unknown drifts", mode: "deny", change: change(Drift, ""), action: policy.Revert, rule: RuleSelfHeal},
		{name: "unknown deletes (drift)", mode: "deny", change: gone(change(Drift, "")), action: policy.Revert, rule: RuleSelfHeal},

		// The Guard's mode softens a deny at admission only.
		{name: "warn guard: person updates", mode: "warn", change: change(Update, "alice"), action: policy.Warn, rule: RuleManagedByGit, policyAction: policy.Deny, reason: "guard enforcement warn"},
		{name: "warn guard: person scales", mode: "warn", change: scale(change(Update, "alice")), action: policy.Warn, rule: RuleManagedByGit, policyAction: policy.Deny},
		{name: "warn guard: person deletes", mode: "warn", change: change(Delete, "alice"), action: policy.Warn, rule: RuleManagedByGit, policyAction: policy.Deny},
		{name: "dryrun guard: person updates", mode: "dryrun", change: change(Update, "alice"), action: policy.Revert, rule: RuleManagedByGit, policyAction: policy.Deny, reason: "dryrun"},
		{name: "dryrun guard: allowed stays allowed", mode: "dryrun", change: change(Update, guardUser), action: policy.Allow, rule: RuleGuardIdentity},
		{name: "warn guard: drift reverts", mode: "warn", change: change(Drift, "alice"), action: policy.Revert, rule: RuleSelfHeal},
		{name: "dryrun guard: drift reverts", mode: "dryrun", change: change(Drift, ""), action: policy.Revert, rule: RuleSelfHeal},
		{name: "warn guard: a deny after the fact stays a deny (reverted)", policy: denyAll, mode: "warn", change: change(Drift, "alice"), action: policy.Deny, rule: "deny-all"},
		{name: "unset mode is deny", mode: "", change: change(Update, "alice"), action: policy.Deny, rule: RuleManagedByGit},

		// The object's annotation in Git.
		{name: "off: person updates", mode: "deny", annot: "off", change: change(Update, "alice"), action: policy.Allow, rule: RuleEnforcementOff},
		{name: "off: person deletes", mode: "deny", annot: "off", change: change(Delete, "alice"), action: policy.Allow, rule: RuleEnforcementOff},
		{name: "off: drift kept", mode: "deny", annot: "off", change: change(Drift, ""), action: policy.Allow, rule: RuleEnforcementOff},
		{name: "off: a policy that reverts does not", policy: revertAll, mode: "deny", annot: "off", change: change(Update, "alice"), action: policy.Allow, rule: RuleEnforcementOff},
		{name: "off: a policy error does not deny", policy: broken, mode: "deny", annot: "off", change: change(Update, "alice"), action: policy.Allow, rule: RuleEnforcementOff},
		{name: "off: break-glass is not temporary", mode: "deny", annot: "off", change: breakGlass(change(Drift, "sam", "sre"), "INC-1"), action: policy.Allow, rule: RuleEnforcementOff},
		{name: "revert in Git wins over warn guard", mode: "warn", annot: "revert", change: change(Update, "alice"), action: policy.Revert, rule: RuleManagedByGit, policyAction: policy.Deny, reason: "enforcement revert in Git"},
		{name: "warn in Git", mode: "deny", annot: "warn", change: change(Update, "alice"), action: policy.Warn, rule: RuleManagedByGit, policyAction: policy.Deny, reason: "enforcement warn in Git"},
		{name: "deny in Git wins over dryrun guard", mode: "dryrun", annot: "deny", change: change(Update, "alice"), action: policy.Deny, rule: RuleManagedByGit},
		{name: "warn in Git: drift reverts", mode: "deny", annot: "warn", change: change(Drift, "alice"), action: policy.Revert, rule: RuleSelfHeal},
		{name: "revert in Git: allowed stays allowed", mode: "deny", annot: "revert", change: change(Update, kcm), action: policy.Allow, rule: RuleSystemController},

		// What is kept for a time is what the policy says, not a rule name.
		{name: "renamed break-glass is temporary", policy: renamed, mode: "deny", change: change(Update, "sam", "sre"), action: policy.Allow, rule: "emergency", temporary: true},
		{name: "renamed break-glass on drift is temporary", policy: renamed, mode: "deny", change: change(Drift, "sam", "sre"), action: policy.Allow, rule: "emergency", temporary: true},
		{name: "the name break-glass alone is not temporary", policy: oldName, mode: "deny", change: change(Drift, "sam", "sre"), action: policy.Allow, rule: RuleBreakGlass},
		{name: "temporary on a deny means nothing", policy: denyAll, mode: "deny", change: change(Update, "alice"), action: policy.Deny, rule: "deny-all"},
		{name: "temporary on a softened deny means nothing", policy: denyAll, mode: "warn", change: change(Update, "alice"), action: policy.Warn, rule: "deny-all", policyAction: policy.Deny},

		// Policy errors go to the caller's failure policy.
		{name: "policy error at admission", policy: broken, mode: "warn", change: change(Update, "alice"), err: "policy error"},
		{name: "policy error on drift", policy: broken, mode: "deny", change: change(Drift, ""), err: "no decision"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := policy.NewEngine(policy.Config{GuardUsers: []string{guardUser}, BreakGlassGroups: []string{"sre"}}, logr.Discard())
			if tt.policy != "" {
				if err := e.Load(map[string]string{"p.rego": tt.policy}); err != nil {
					t.Fatal(err)
				}
			}
			c := tt.change
			if !c.Orphan {
				c.Desired = desired(tt.annot)
				c.Source = c.Desired.Source
			}
			r, err := New(e, guards{mode: tt.mode}).Decide(context.Background(), c)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("err = %v, want one with %q (result %+v)", err, tt.err, r)
				}
				if r.Input.Guard != "shop" {
					t.Fatalf("a failed decision must return its input for the record: %+v", r.Input)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if r.Action != tt.action || r.Rule != tt.rule || r.PolicyAction != tt.policyAction || r.Temporary != tt.temporary {
				t.Fatalf("got action %s rule %s policyAction %q temporary %v (%s), want %s %s %q %v",
					r.Action, r.Rule, r.PolicyAction, r.Temporary, r.Reason, tt.action, tt.rule, tt.policyAction, tt.temporary)
			}
			if !strings.Contains(r.Reason, tt.reason) {
				t.Fatalf("reason %q lacks %q", r.Reason, tt.reason)
			}
		})
	}
}

// TestInput: the policy's input is built from the change alike on both
// paths.
func TestInput(t *testing.T) {
	g := guards{mode: "warn"}

	in := change(Drift, "").input(g)
	if in.User.Username != Unknown || in.User.ServiceAccount {
		t.Errorf("an unnamed user is %q", in.User.Username)
	}
	if in.PolicyData["team"] != "payments-shop" || in.GuardSpec["enforcement"] != "warn" {
		t.Errorf("policy data %v, guard spec %v", in.PolicyData, in.GuardSpec)
	}

	c := change(Update, "system:serviceaccount:ci:deployer")
	c.Changes = append(c.Changes, drift.Change{Path: "/spec/template/spec/hostNetwork", Live: true, Added: true},
		drift.Change{Path: "/spec/template/spec/automountServiceAccountToken", Desired: false, Missing: true})
	c.Desired, c.FieldManager = desired(""), "kubectl-edit"
	in = c.input(g)
	if !in.User.ServiceAccount || len(in.Drift) != 3 || in.Desired == nil || in.FieldManager != "kubectl-edit" {
		t.Errorf("input %+v", in)
	}
	if len(in.Added) != 1 || in.Added[0] != "/spec/template/spec/hostNetwork" {
		t.Errorf("added %v", in.Added)
	}

	for _, c := range []Change{change(Delete, "alice"), gone(change(Drift, ""))} {
		in := c.input(g)
		if len(in.Drift) != 1 || in.Drift[0].Path != "" || in.Drift[0].Desired != "present" {
			t.Errorf("%s: a deletion is one change of the whole object: %+v", c.Operation, in.Drift)
		}
	}

	in = orphan(change(Create, "alice")).input(g)
	if !in.Orphan || in.Drift == nil || len(in.Drift) != 0 || in.Desired != nil {
		t.Errorf("orphan input %+v", in)
	}

	in = breakGlass(change(Update, "sam"), "INC-1").input(nil)
	if in.Annotations[v1alpha1.BreakGlassAnnotation] != "INC-1" || in.PolicyData != nil {
		t.Errorf("annotations %v, policy data %v", in.Annotations, in.PolicyData)
	}
}

// TestDecideInput: tools decide a hand-written input with the enforcement
// it carries (desired's annotation, guardSpec.enforcement).
func TestDecideInput(t *testing.T) {
	e := policy.NewEngine(policy.Config{}, logr.Discard())
	m := New(e, nil)
	in := change(Update, "alice").input(guards{mode: "dryrun"})
	r, err := m.DecideInput(context.Background(), in, EnforcementOf(in))
	if err != nil || r.Action != policy.Revert || r.PolicyAction != policy.Deny {
		t.Fatalf("dryrun from guardSpec: %+v %v", r, err)
	}
	c := change(Update, "alice")
	c.Desired = desired("off")
	in = c.input(nil)
	if r, err := m.DecideInput(context.Background(), in, EnforcementOf(in)); err != nil || r.Rule != RuleEnforcementOff {
		t.Fatalf("off from desired: %+v %v", r, err)
	}
	if _, err := New(nil, nil).Decide(context.Background(), change(Drift, "")); !errors.Is(err, ErrNoPolicy) {
		t.Fatalf("no policy: %v", err)
	}
}

func TestAtAdmission(t *testing.T) {
	tests := []struct {
		object, guard string
		want          policy.Action
	}{
		{"", "", policy.Deny}, {"", "deny", policy.Deny}, {"", "warn", policy.Warn}, {"", "dryrun", policy.Revert},
		{"off", "deny", policy.Allow}, {"revert", "deny", policy.Revert}, {"warn", "deny", policy.Warn},
		{"deny", "dryrun", policy.Deny}, {"deny", "warn", policy.Deny},
	}
	for _, tt := range tests {
		if got := (Enforcement{Object: tt.object, Guard: tt.guard}).AtAdmission(); got != tt.want {
			t.Errorf("object %q guard %q: %s, want %s", tt.object, tt.guard, got, tt.want)
		}
	}
}

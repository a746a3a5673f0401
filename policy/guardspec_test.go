package policy

import (
	"context"
	"testing"

	"github.com/go-logr/logr"
)

// TestGuardSpecReachesThePolicy: a policy can decide by the Guard's spec.
func TestGuardSpecReachesThePolicy(t *testing.T) {
	e := NewEngine(Config{}, logr.Discard())
	err := e.Load(map[string]string{"p.rego": `package driftguard

decision := {"action": "warn", "reason": sprintf("guard follows %s", [input.guardSpec.ref]), "rule": "spec"} if {
	input.guardSpec.sync == "manual"
	input.guardSpec.retry.limit == 3
} else := {"action": "deny", "reason": "no", "rule": "default"}
`})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		spec map[string]any
		want Action
	}{
		{map[string]any{"sync": "manual", "ref": "main", "retry": map[string]any{"limit": float64(3)}}, Warn},
		{map[string]any{"sync": "auto", "ref": "main"}, Deny},
		{nil, Deny},
	} {
		d, err := e.Decide(context.Background(), Input{Operation: "UPDATE", GuardSpec: c.spec})
		if err != nil {
			t.Fatal(err)
		}
		if d.Action != c.want {
			t.Fatalf("spec %v: %s (%s), want %s", c.spec, d.Action, d.Reason, c.want)
		}
	}
}

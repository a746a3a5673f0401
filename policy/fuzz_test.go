package policy

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/go-logr/logr"
)

// FuzzInput builds Inputs from random parts and checks that the default
// policy always decides, without error or panic, and that a policy reading
// every field never panics.
func FuzzInput(f *testing.F) {
	f.Add("UPDATE", "alice", "dev,system:authenticated", "Deployment", "", `{"spec":{"replicas":5}}`, `3`, "/spec/replicas", false)
	f.Add("DRIFT", guardSA, "", "ConfigMap", "INC-1", `{"data":{"a":"b"}}`, `null`, "/data/a", true)
	f.Add("DELETE", "system:node:n1", "sre", "Namespace", " ", `[]`, `{"x":[1,2,{"y":1.5e300}]}`, "", false)
	f.Add("", "", ",,", "", "\x00", `not json`, `"s"`, "~1", true)

	def := NewEngine(testConfig, logr.Discard())
	reader := NewEngine(testConfig, logr.Discard())
	err := reader.Load(map[string]string{"all.rego": `package driftguard

decision := {"action": "warn", "reason": sprintf("%v %v %v %v", [
	input.object, input.drift, input.annotations, input.user,
])} if {
	input.operation != "DELETE"
} else := {"action": "deny", "reason": json.marshal(input)}
`})
	if err != nil {
		f.Fatal(err)
	}
	ctx := context.Background()

	f.Fuzz(func(t *testing.T, op, user, groups, kind, breakGlass, object, value, path string, dryRun bool) {
		var obj map[string]any
		_ = json.Unmarshal([]byte(object), &obj) // invalid JSON leaves obj nil, which is a valid input too
		var v any
		if json.Unmarshal([]byte(value), &v) != nil {
			v = value
		}
		in := Input{
			Operation: op,
			User:      User{Username: user, Groups: strings.Split(groups, ","), ServiceAccount: strings.HasPrefix(user, "system:serviceaccount:")},
			Resource:  Resource{Kind: kind, Name: kind},
			Object:    obj,
			OldObject: obj,
			Drift:     []Change{{Path: path, Desired: v, Live: obj}},
			DryRun:    dryRun,
		}
		if breakGlass != "" {
			in.Annotations = map[string]string{"driftguard.io/break-glass": breakGlass}
		}

		d, err := def.Decide(ctx, in)
		if err != nil {
			t.Fatalf("default policy: %v", err)
		}
		if !d.Action.Valid() || d.Rule == "" || d.Reason == "" {
			t.Fatalf("default policy decided %+v", d)
		}
		if _, err := reader.Decide(ctx, in); err != nil {
			t.Fatalf("reader policy: %v", err)
		}
	})
}

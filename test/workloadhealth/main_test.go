// Package workloadhealth shows the health assessment of Guards end to end on the
// simulated cluster (kube-controller-manager, kube-scheduler and a KWOK
// node): Deployments that roll out, roll out a new image or cannot be
// scheduled, Jobs that complete or fail, spec.wait and spec.dependsOn
// holding a Guard until another is healthy, and a custom health rule in
// Rego deciding what status.health shows. One cluster serves the package;
// each test has its own namespaces and Guards and runs in parallel.
package workloadhealth

import (
	"fmt"
	"os"
	"testing"

	"github.com/driftguard/driftguard/app"
	"github.com/driftguard/driftguard/devenv"
	"github.com/driftguard/driftguard/test/harness"
)

var h *harness.Harness

// healthRego is the custom health rule the guard loads from its policy
// folder: a ConfigMap labelled health.example.com/from-data takes its
// health from its own data (state, message). The built-in rule says every
// ConfigMap is Healthy, so any other state in status comes from this rule.
const healthRego = `package driftguard

health := {"state": input.object.data.state, "message": object.get(input.object.data, "message", "set by its data")} if {
	input.object.apiVersion == "v1"
	input.object.kind == "ConfigMap"
	input.object.metadata.labels["health.example.com/from-data"] == "true"
}
`

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	if missing := devenv.MissingBinaries(devenv.DefaultBinDir(), true); len(missing) > 0 {
		fmt.Fprintf(os.Stderr, "missing binaries %v in %s: run tools/build.sh\n", missing, devenv.DefaultBinDir())
		return 1
	}
	policyDir, err := os.MkdirTemp("", "driftguard-health-policy-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(policyDir)
	// The policy folder replaces the built-in policy: keep its decision
	// rule beside the health rule.
	if err := harness.WriteDefaultPolicy(policyDir, map[string]string{"health.rego": healthRego}); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	h, err = harness.Start(harness.Options{Simulated: true, Guard: func(o *app.Options) {
		o.WebhookRegister = false // nobody changes objects by hand here
		o.PolicyDir = policyDir
	}})
	if err != nil {
		fmt.Fprintln(os.Stderr, "start harness:", err)
		return 1
	}
	defer h.Stop()
	return m.Run()
}

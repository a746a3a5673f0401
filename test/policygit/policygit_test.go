// Package policygit runs the guard with its admission policy kept in Git
// (--policy-git): the policy is reviewed and synced like any manifest.
package policygit

import (
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/driftguard/driftguard/app"
	"github.com/driftguard/driftguard/audit"
	"github.com/driftguard/driftguard/test/harness"
	"github.com/driftguard/driftguard/test/wait"
)

var h *harness.Harness

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	var err error
	h, err = harness.Start(harness.Options{Guard: func(o *app.Options) { o.PolicyGit = "platform:policies" }})
	if err != nil {
		fmt.Fprintln(os.Stderr, "start harness:", err)
		return 1
	}
	defer h.Stop()
	return m.Run()
}

// policy denies every change by a person with a reason naming its version.
func policy(version string) string {
	return fmt.Sprintf(`package driftguard

decision := {"action": "allow", "reason": "the guard", "rule": "guard"} if {
	input.user.username in data.driftguard.config.guardUsers
} else := {"action": "revert", "reason": "drift", "rule": "self-heal"} if {
	input.operation == "DRIFT"
} else := {"action": "deny", "reason": "policy %s from Git says no", "rule": "git-policy"}
`, version)
}

const cm = `apiVersion: v1
kind: ConfigMap
metadata:
  name: cm
  namespace: default
data:
  value: git
`

func TestPolicyFromGit(t *testing.T) {
	platform := h.NewGuard(t, "platform", true, map[string]string{"policies/decision.rego": policy("v1"), "cm.yaml": cm})
	h.WaitApplied(t, platform.Guard, platform.Initial)
	patch := []string{"patch", "configmap", "cm", "-n", "default", "--type=merge", "-p", `{"data":{"value":"by alice"}}`}
	denied := func(want string) {
		t.Helper()
		wait.Eventually(t, 30*time.Second, "denied by "+want, func() error {
			out, err := h.Kubectl(t, patch...)
			if err == nil || !strings.Contains(out, want) {
				return fmt.Errorf("kubectl: %v: %s", err, out)
			}
			return nil
		})
	}
	denied("policy v1 from Git says no")

	// A policy that does not compile: recorded with file and line, v1 keeps serving.
	broken := platform.Change(t, "broken policy", map[string]string{"policies/decision.rego": "package driftguard\n\ndecision := {\n"})
	h.WaitApplied(t, platform.Guard, broken)
	rec := h.Audit.Wait(t, 30*time.Second, "policy error", func(r audit.Record) bool {
		return r.Type == audit.Error && r.Operation == "POLICY" && r.Source != nil && r.Source.Revision == broken
	})
	if rec.Source.Path != "policies/decision.rego" || rec.Source.Line == 0 || !strings.Contains(rec.Error, "last good policy keeps serving") {
		t.Fatalf("policy error record must name the file and line: %+v", rec)
	}
	denied("policy v1 from Git says no")

	fixed := platform.Change(t, "policy v2", map[string]string{"policies/decision.rego": policy("v2")})
	h.WaitApplied(t, platform.Guard, fixed)
	denied("policy v2 from Git says no")
}

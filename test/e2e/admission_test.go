package e2e

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/driftguard/driftguard/audit"
	"github.com/driftguard/driftguard/test/wait"
)

// TestKubectlChangesAreDenied: a person's scale, edit-style patch, label
// removal and delete of a managed object are denied, and the message names
// the Git file and revision that own it.
func TestKubectlChangesAreDenied(t *testing.T) {
	t.Parallel()
	const ns = "deny"
	repo := h.NewGuard(t, "deny", true, map[string]string{
		"ns.yaml":          namespace(ns),
		"apps/web.yaml":    deployment(ns, "web", 2),
		"apps/config.yaml": configMap(ns, "web-config", "from git"),
	})
	h.WaitApplied(t, repo.Guard, repo.Initial)
	short := repo.Initial[:7]

	tests := []struct {
		name   string
		args   []string
		file   string
		fields []string
	}{
		{"scale", []string{"scale", "deploy/web", "--replicas=5", "-n", ns}, "apps/web.yaml", []string{"/spec/replicas: 2 → 5"}},
		{"edit-style patch", []string{"patch", "configmap", "web-config", "-n", ns, "--type=merge", "-p", `{"data":{"value":"by hand"}}`}, "apps/config.yaml", []string{`/data/value: "from git" → "by hand"`}},
		{"image change", []string{"set", "image", "deploy/web", "app=nginx:evil", "-n", ns}, "apps/web.yaml", []string{"/spec/template/spec/containers/0/image"}},
		{"label removal", []string{"label", "configmap", "web-config", "-n", ns, "driftguard.io/guard-"}, "apps/config.yaml", []string{"/metadata/labels"}},
		{"namespace label removal", []string{"label", "namespace", ns, "driftguard.io/guard-"}, "ns.yaml", []string{"/metadata/labels"}},
		{"delete", []string{"delete", "configmap", "web-config", "-n", ns, "--wait=false"}, "apps/config.yaml", []string{"Deleting it"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, err := h.Kubectl(t, tt.args...)
			if err == nil {
				t.Fatalf("kubectl %s was admitted: %s", strings.Join(tt.args, " "), out)
			}
			for _, want := range append([]string{"denied the request", "managed by Git", repo.URL, tt.file, "@" + short}, tt.fields...) {
				if !strings.Contains(out, want) {
					t.Errorf("denial does not mention %q:\n%s", want, out)
				}
			}
		})
	}
	// A server-side dry run is decided the same way and recorded as a dry run.
	if out, err := h.Kubectl(t, "scale", "deploy/web", "--replicas=4", "-n", ns, "--dry-run=server"); err == nil || !strings.Contains(out, "managed by Git") {
		t.Fatalf("dry-run scale must be denied like the real one: %v %s", err, out)
	}
	dry := h.Audit.Wait(t, 10*time.Second, "dry-run decision", func(r audit.Record) bool {
		return r.Type == audit.Decision && r.Object.Name == "web" && r.DryRun
	})
	if len(dry.Fields) != 1 || dry.Fields[0].Live != float64(4) {
		t.Fatalf("dry-run record: %+v", dry)
	}
	// Nothing changed.
	waitValue(t, ns, "web-config", "from git")
	out, err := h.Kubectl(t, "get", "deploy/web", "-n", ns, "-o", "jsonpath={.spec.replicas}")
	if err != nil || out != "2" {
		t.Fatalf("replicas after denied scale = %q (%v), want 2", out, err)
	}
	rec := h.Audit.Wait(t, 10*time.Second, "denied scale", func(r audit.Record) bool {
		return r.Type == audit.Decision && r.Action == "deny" && r.Object.Name == "web" && r.Operation == "UPDATE/scale"
	})
	if rec.User != "alice" || rec.Source == nil || rec.Source.Path != "apps/web.yaml" || len(rec.Fields) != 1 || rec.Fields[0].Path != "/spec/replicas" {
		t.Fatalf("decision record does not name user, file and field: %+v", rec)
	}
}

// TestUnmanagedObjectsAreAdmitted: objects the guard does not manage pass; an
// addition to a managed object (a field Git does not set) is a change like
// any other, and is denied.
func TestUnmanagedObjectsAreAdmitted(t *testing.T) {
	t.Parallel()
	const ns = "admit"
	repo := h.NewGuard(t, "admit", true, map[string]string{
		"ns.yaml": namespace(ns),
		"cm.yaml": configMap(ns, "managed", "git"),
	})
	h.WaitApplied(t, repo.Guard, repo.Initial)
	if out, err := h.Kubectl(t, "annotate", "configmap", "managed", "-n", ns, "note=hello"); err == nil || !strings.Contains(out, `/metadata/annotations/note: (added) "hello"`) {
		t.Fatalf("an annotation Git does not set must be denied, naming it: %v %s", err, out)
	}
	if out, err := h.Kubectl(t, "create", "configmap", "mine", "-n", ns, "--from-literal=a=b"); err != nil {
		t.Fatalf("unmanaged create denied: %s", out)
	}
	if out, err := h.Kubectl(t, "delete", "configmap", "mine", "-n", ns); err != nil {
		t.Fatalf("unmanaged delete denied: %s", out)
	}
}

// TestBrokenPolicyKeepsLastGood: a Rego file that does not compile is
// reported with file:line and the previous policy keeps serving.
func TestBrokenPolicyKeepsLastGood(t *testing.T) {
	// Not parallel: it changes the policy every test shares.
	const ns = "policy"
	repo := h.NewGuard(t, "policy", true, map[string]string{
		"ns.yaml": namespace(ns),
		"cm.yaml": configMap(ns, "cm", "git"),
	})
	h.WaitApplied(t, repo.Guard, repo.Initial)
	broken := fmt.Sprintf("%s/broken.rego", policyDir)
	writeFile(t, broken, "package driftguard\n\ndecision := {\"action\": \n")
	t.Cleanup(func() { removeFile(t, broken) })
	wait.Eventually(t, 15*time.Second, "compile error logged with file:line", func() error {
		return h.LogContains("broken.rego:")
	})
	out, err := h.Kubectl(t, "patch", "configmap", "cm", "-n", ns, "--type=merge", "-p", `{"data":{"value":"x"}}`)
	if err == nil || !strings.Contains(out, "denied") {
		t.Fatalf("with a broken policy file the last good policy must keep denying: %v %s", err, out)
	}
}

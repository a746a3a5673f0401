package writeback

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/driftguard/driftguard/api/v1alpha1"
	"github.com/driftguard/driftguard/test/wait"
)

func rollbackFiles(greeting string) map[string]string {
	return map[string]string{
		"deploy/ns.yaml": "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: rollback\n",
		"deploy/cm.yaml": fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cfg\n  namespace: rollback\ndata:\n  greeting: %s\n", greeting),
	}
}

func waitGreeting(t *testing.T, want string) {
	t.Helper()
	wait.Eventually(t, 30*time.Second, "greeting "+want, func() error {
		var cm corev1.ConfigMap
		if err := h.Admin.Get(context.Background(), client.ObjectKey{Namespace: "rollback", Name: "cfg"}, &cm); err != nil {
			return err
		}
		if cm.Data["greeting"] != want {
			return fmt.Errorf("greeting %q", cm.Data["greeting"])
		}
		return nil
	})
}

var shaLine = regexp.MustCompile(`^[0-9a-f]{40}\n$`)

// TestRollback: rev1, then rev2 changes a ConfigMap; rollback --to rev1
// commits rev1's tree of the Guard's path on top, and the guard's normal
// loop puts rev1's data back. Files outside the path keep rev2's content.
func TestRollback(t *testing.T) {
	files := rollbackFiles("rev1")
	files["README.md"] = "rev1\n"
	repo := h.NewGuard(t, "rollback", true, files, func(s *v1alpha1.GuardSpec) { s.Git.Path = "deploy" })
	rev1 := repo.Initial
	h.WaitApplied(t, repo.Guard, rev1)
	waitGreeting(t, "rev1")

	write := rollbackFiles("rev2")
	write["README.md"] = "rev2\n"
	write["deploy/extra.yaml"] = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: extra\n  namespace: rollback\n"
	rev2 := repo.Change(t, "rev2", write)
	h.WaitApplied(t, repo.Guard, rev2)
	waitGreeting(t, "rev2")

	admin := h.Cluster.AdminKubeconfig
	out, errOut, err := driftguard(t, "rollback", repo.Guard, "--to", rev1[:8], "--kubeconfig", admin, "--dry-run")
	if err != nil || !strings.Contains(out, "-  greeting: rev2") || !strings.Contains(out, "+  greeting: rev1") || strings.Contains(out, "README") {
		t.Fatalf("rollback --dry-run: %v\n%s%s", err, out, errOut)
	}

	out, errOut, err = driftguard(t, "rollback", repo.Guard, "--to", rev1[:8], "--kubeconfig", admin, "--author", "Ops Bot <ops@example.invalid>")
	if err != nil || !shaLine.MatchString(out) {
		t.Fatalf("rollback: %v\nstdout %q\nstderr %s", err, out, errOut)
	}
	sha := strings.TrimSpace(out)
	if !strings.Contains(errOut, "rolled back deploy of guard rollback to "+rev1[:7]) {
		t.Errorf("stderr: %s", errOut)
	}

	clone := gitClone(t, repo.URL)
	if head := gitRun(t, clone, "rev-parse", "HEAD"); head != sha {
		t.Fatalf("remote head %s, rollback printed %s", head, sha)
	}
	if parent := gitRun(t, clone, "rev-parse", "HEAD^"); parent != rev2 {
		t.Fatalf("rollback commit's parent %s, want rev2 %s: history must not be rewritten", parent, rev2)
	}
	if got, want := gitRun(t, clone, "rev-parse", "HEAD:deploy"), gitRun(t, clone, "rev-parse", rev1+":deploy"); got != want {
		t.Fatalf("deploy is tree %s, want rev1's %s", got, want)
	}
	if readme, _ := os.ReadFile(filepath.Join(clone, "README.md")); string(readme) != "rev2\n" {
		t.Fatalf("README.md outside the Guard's path changed: %q", readme)
	}
	if msg := gitRun(t, clone, "log", "-1", "--format=%an <%ae>|%s"); msg != "Ops Bot <ops@example.invalid>|roll back deploy to "+rev1[:7] {
		t.Fatalf("commit %q", msg)
	}

	// The normal loop applies it: rev1's data, and rev2's extra ConfigMap pruned.
	h.WaitApplied(t, repo.Guard, sha)
	waitGreeting(t, "rev1")
	wait.Eventually(t, 30*time.Second, "extra pruned", func() error {
		var cm corev1.ConfigMap
		err := h.Admin.Get(context.Background(), client.ObjectKey{Namespace: "rollback", Name: "extra"}, &cm)
		if err == nil {
			return fmt.Errorf("extra still exists")
		}
		return client.IgnoreNotFound(err)
	})

	// Rolling back to where the path already is commits nothing.
	out, errOut, err = driftguard(t, "rollback", repo.Guard, "--to", rev1, "--kubeconfig", admin)
	if err != nil || strings.TrimSpace(out) != sha || !strings.Contains(errOut, "already equals "+rev1[:7]) {
		t.Fatalf("second rollback: %v\nstdout %q\nstderr %s", err, out, errOut)
	}
}

// TestRollbackRefusals: a Guard that follows a tag or a SHA has no branch
// to commit to.
func TestRollbackRefusals(t *testing.T) {
	tagged := h.NewGuard(t, "tagged", false, map[string]string{"ns.yaml": "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: tagged\n"},
		func(s *v1alpha1.GuardSpec) { s.Git.Ref = "v1" })
	if err := tagged.Tag("v1"); err != nil {
		t.Fatal(err)
	}
	pinned := h.NewGuard(t, "pinned", false, map[string]string{"ns.yaml": "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: pinned\n"})
	g := h.Guard(t, pinned.Guard)
	g.Spec.Git.Ref = pinned.Initial
	if err := h.Admin.Update(context.Background(), g); err != nil {
		t.Fatal(err)
	}
	plain := h.NewGuard(t, "plain", false, map[string]string{"ns.yaml": "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: plain\n"},
		func(s *v1alpha1.GuardSpec) { s.Git.Path = "." })
	admin := h.Cluster.AdminKubeconfig
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"tag", []string{"rollback", "tagged", "--to", tagged.Initial}, "guard tagged: ref v1 is a tag: there is no branch to push to"},
		{"sha", []string{"rollback", "pinned", "--to", pinned.Initial}, "is a commit SHA: there is no branch to push to"},
		{"no --to", []string{"rollback", "pinned"}, "--to REV is required"},
		{"no guard", []string{"rollback", "nosuch", "--to", "HEAD"}, "guard nosuch"},
		{"unknown revision", []string{"rollback", plain.Guard, "--to", "nosuchrev"}, `revision "nosuchrev" not found on branch main`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			out, errOut, err := driftguard(t, append(tc.args, "--kubeconfig", admin)...)
			if err == nil || !strings.Contains(errOut, tc.want) {
				t.Fatalf("%v: %v\nstdout: %s\nstderr: %s\nwant %q", tc.args, err, out, errOut, tc.want)
			}
		})
	}
}

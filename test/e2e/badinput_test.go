package e2e

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/driftguard/driftguard/api/v1alpha1"
	"github.com/driftguard/driftguard/audit"
	"github.com/driftguard/driftguard/gitserver"
	"github.com/driftguard/driftguard/test/wait"
)

// TestBrokenYAMLKeepsLastGoodRevision: a commit whose YAML does not parse
// stalls the Guard with file and line; the last good revision stays applied
// and nothing is pruned.
func TestBrokenYAMLKeepsLastGoodRevision(t *testing.T) {
	t.Parallel()
	const ns = "broken-yaml"
	repo := h.NewGuard(t, "broken-yaml", true, map[string]string{
		"ns.yaml": namespace(ns),
		"a.yaml":  configMap(ns, "a", "good"),
		"b.yaml":  configMap(ns, "b", "good"),
	})
	h.WaitApplied(t, repo.Guard, repo.Initial)

	bad := repo.Change(t, "break b", map[string]string{
		"a.yaml": configMap(ns, "a", "must not be applied"),
		"b.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: b\n  namespace: " + ns + "\ndata:\n  value: [unclosed\n",
	})
	var g *v1alpha1.Guard
	wait.Eventually(t, 30*time.Second, "guard stalls on the broken revision", func() error {
		g = h.Guard(t, repo.Guard)
		stalled := meta.FindStatusCondition(g.Status.Conditions, v1alpha1.ConditionStalled)
		if g.Status.LastAttemptedRevision != bad || stalled == nil || stalled.Status != metav1.ConditionTrue {
			return fmt.Errorf("conditions %+v", g.Status.Conditions)
		}
		return nil
	})
	ready := meta.FindStatusCondition(g.Status.Conditions, v1alpha1.ConditionReady)
	if ready == nil || ready.Status != metav1.ConditionFalse || !strings.Contains(ready.Message, "b.yaml:") {
		t.Fatalf("Ready must be False naming b.yaml and a line: %+v", ready)
	}
	if g.Status.LastAppliedRevision != repo.Initial {
		t.Fatalf("last applied revision = %s, want the last good %s", g.Status.LastAppliedRevision, repo.Initial)
	}
	rec := h.Audit.Wait(t, 10*time.Second, "render error", func(r audit.Record) bool {
		return r.Type == audit.Error && r.Guard == repo.Guard && r.Source != nil && r.Source.Revision == bad
	})
	if rec.Source.Path != "b.yaml" || rec.Source.Line == 0 {
		t.Fatalf("render error record must name file and line: %+v", rec.Source)
	}
	for _, name := range []string{"a", "b"} {
		cm, err := getConfigMap(t, ns, name)
		if err != nil {
			t.Fatalf("%s was deleted by a broken revision: %v", name, err)
		}
		if cm.Data["value"] != "good" {
			t.Fatalf("%s changed by a broken revision: %q", name, cm.Data["value"])
		}
	}
	// A fixed commit recovers.
	fixed := repo.Change(t, "fix b", map[string]string{"b.yaml": configMap(ns, "b", "fixed")})
	h.WaitApplied(t, repo.Guard, fixed)
	waitValue(t, ns, "b", "fixed")
	waitValue(t, ns, "a", "must not be applied") // the later commit's a.yaml is in force now
}

// TestUnreachableGitLeavesEverythingInPlace: when the Git server goes away the
// Guard reports it and retries; nothing applied is touched; when the server
// is back, new commits are applied.
func TestUnreachableGitLeavesEverythingInPlace(t *testing.T) {
	t.Parallel()
	const ns = "unreachable"
	srv, err := gitserver.Start(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	repo, err := srv.NewRepo("flaky")
	if err != nil {
		t.Fatal(err)
	}
	for p, c := range map[string]string{"ns.yaml": namespace(ns), "cm.yaml": configMap(ns, "cm", "one")} {
		if err := repo.WriteFile(p, c); err != nil {
			t.Fatal(err)
		}
	}
	rev, err := repo.CommitAndPush("initial")
	if err != nil {
		t.Fatal(err)
	}
	// Serve the repository through a listener the test can close and reopen on the same port.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	front := &http.Server{Handler: srv.Handler()}
	go func() { _ = front.Serve(ln) }()
	url := strings.Replace(srv.URL("flaky"), hostOf(srv.URL("flaky")), addr, 1)

	g := &v1alpha1.Guard{ObjectMeta: metav1.ObjectMeta{Name: "unreachable"},
		Spec: v1alpha1.GuardSpec{Git: &v1alpha1.GitSource{URL: url, Ref: "main"}, Prune: true, Interval: metav1.Duration{Duration: 2 * time.Second}}}
	if err := h.Admin.Create(context.Background(), g); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = h.Admin.Delete(context.Background(), g) })
	h.WaitApplied(t, g.Name, rev)

	_ = front.Close()
	wait.Eventually(t, 60*time.Second, "guard reports the fetch failure", func() error {
		ready := meta.FindStatusCondition(h.Guard(t, g.Name).Status.Conditions, v1alpha1.ConditionReady)
		if ready == nil || ready.Reason != v1alpha1.ReasonFetchFailed {
			return fmt.Errorf("ready = %+v", ready)
		}
		return nil
	})
	if got := h.Guard(t, g.Name).Status.LastAppliedRevision; got != rev {
		t.Fatalf("last applied revision changed to %q while Git was down", got)
	}
	waitValue(t, ns, "cm", "one")

	if err := repo.WriteFile("cm.yaml", configMap(ns, "cm", "two")); err != nil {
		t.Fatal(err)
	}
	rev3, err := repo.CommitAndPush("two")
	if err != nil {
		t.Fatal(err)
	}
	ln2, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatalf("reopen %s: %v", addr, err)
	}
	front2 := &http.Server{Handler: srv.Handler()}
	go func() { _ = front2.Serve(ln2) }()
	defer front2.Close()
	h.WaitApplied(t, g.Name, rev3) // retried with backoff, not given up
	waitValue(t, ns, "cm", "two")
}

func hostOf(u string) string {
	rest := u[strings.Index(u, "://")+3:]
	return rest[:strings.Index(rest, "/")]
}

package faults

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/driftguard/driftguard/api/v1alpha1"
	"github.com/driftguard/driftguard/test/wait"
)

// TestFailedRevisionAfterRestart: a revision that failed to render is in
// the Guard's status, and the next process of the guard (a new leader, a
// restart after a crash) reports the same error from there without
// rendering it again; the next good revision applies and clears it.
func TestFailedRevisionAfterRestart(t *testing.T) {
	const ns, name, n = "fault-failedrev", "fault-failedrev", 10
	namespace(t, ns)
	repo, rev1 := newRepo(t, name, cmFiles(ns, n, 5, gitValues))
	g := startGuard(t, "--webhook-register=false")
	// The record holds for one interval after the failure (renderBackoff):
	// long enough for the next process to start on a busy machine (with 2 s
	// it failed under make test's load: the record had expired, so the new
	// process rendered the revision again, as it should then). Pushes,
	// not the interval, bring each revision.
	createGuard(t, name, func(s *v1alpha1.GuardSpec) { s.Interval = metav1.Duration{Duration: 30 * time.Second} })
	waitApplied(t, g, name, rev1, n, 90*time.Second)

	rev2 := commit(t, repo, "broken", map[string]string{"cms/broken.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: [unclosed\n"})
	if err := g.proc().NotifyPush(t.Context(), git.URL(name)); err != nil {
		t.Fatal(err)
	}
	var first *v1alpha1.RenderFailure
	wait.Eventually(t, 60*time.Second, "revision 2 recorded as failed", func() error {
		got, err := getGuard(name)
		if err != nil {
			return err
		}
		first = got.Status.RenderFailure
		if first == nil || first.Revision != rev2 || first.Failures != 1 || !strings.Contains(first.Message, "cms/broken.yaml") {
			return fmt.Errorf("renderFailure %+v", first)
		}
		return nil
	})

	if err := g.proc().Kill(); err != nil {
		t.Fatal(err)
	}
	g.start()
	wait.Eventually(t, 60*time.Second, "the next process reports the recorded failure", func() error {
		g.alive()
		got, err := getGuard(name)
		if err != nil {
			return err
		}
		stalled := meta.FindStatusCondition(got.Status.Conditions, v1alpha1.ConditionStalled)
		if stalled == nil || stalled.Reason != v1alpha1.ReasonRenderFailed || !strings.Contains(stalled.Message, "cms/broken.yaml") || !strings.Contains(stalled.Message, "(failed before; tried again at ") {
			return fmt.Errorf("Stalled %+v", stalled)
		}
		if f := got.Status.RenderFailure; f == nil || f.Failures != 1 || !f.LastFailure.Equal(&first.LastFailure) {
			return fmt.Errorf("renderFailure %+v changed: the revision was rendered again", f)
		}
		if got.Status.LastAppliedRevision != rev1 {
			return fmt.Errorf("last applied %s, want %s", got.Status.LastAppliedRevision, rev1)
		}
		return nil
	})

	rev3 := commit(t, repo, "fixed", nil, "cms/broken.yaml")
	if err := g.proc().NotifyPush(t.Context(), git.URL(name)); err != nil {
		t.Fatal(err)
	}
	waitApplied(t, g, name, rev3, n, 60*time.Second)
	if got, err := getGuard(name); err != nil || got.Status.RenderFailure != nil {
		t.Fatalf("renderFailure after a good revision: %+v, %v", got.Status.RenderFailure, err)
	}
}

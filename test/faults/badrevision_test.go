package faults

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/driftguard/driftguard/api/v1alpha1"
	"github.com/driftguard/driftguard/audit"
	"github.com/driftguard/driftguard/test/wait"
)

// TestBrokenFileAmongMany: a revision that drops five files (50 objects),
// changes one and breaks another (a YAML syntax error in the fifth document
// of cms/file-13.yaml) is not applied at all: nothing of the last good
// revision is deleted or changed, the status names the file and the line,
// and self-heal still works from the last good revision. The next good
// revision applies and prunes.
func TestBrokenFileAmongMany(t *testing.T) {
	const ns, name, n, perFile = "fault-broken", "fault-broken", 300, 10
	namespace(t, ns)
	repo, rev1 := newRepo(t, name, cmFiles(ns, n, perFile, gitValues))
	g := startGuard(t, "--webhook-register=false")
	createGuard(t, name, func(s *v1alpha1.GuardSpec) {
		s.Prune = true
		s.Interval = metav1.Duration{Duration: 2 * time.Second}
	})
	waitApplied(t, g, name, rev1, n, 90*time.Second)

	// Revision 2: files 25..29 removed, file 3 changed, file 13 broken.
	changed := func(i int) string {
		if i/perFile == 3 {
			return "v2"
		}
		return gitValue
	}
	files := cmFiles(ns, n, perFile, changed)
	broken := strings.Replace(files[cmFile(13)], "name: "+cmName(134)+"\n", "name: "+cmName(134)+"\n  labels: {app: [unclosed\n", 1)
	var removed []string
	for f := 25; f < 30; f++ {
		removed = append(removed, cmFile(f))
	}
	rev2 := commit(t, repo, "broken", map[string]string{cmFile(3): files[cmFile(3)], cmFile(13): broken}, removed...)
	if err := g.proc().NotifyPush(t.Context(), git.URL(name)); err != nil {
		t.Fatal(err)
	}
	brokenLine := 1 + 8*4 + 4 // fifth document (8 lines each with its separator), its labels line
	var ready *metav1.Condition
	wait.Eventually(t, 60*time.Second, "revision 2 refused", func() error {
		got, err := getGuard(name)
		if err != nil {
			return err
		}
		ready = meta.FindStatusCondition(got.Status.Conditions, v1alpha1.ConditionReady)
		if got.Status.LastAttemptedRevision != rev2 || ready == nil || ready.Status != metav1.ConditionFalse {
			return fmt.Errorf("attempted %q, Ready %+v", got.Status.LastAttemptedRevision, ready)
		}
		if got.Status.LastAppliedRevision != rev1 {
			return fmt.Errorf("last applied %q, want %q", got.Status.LastAppliedRevision, rev1)
		}
		return nil
	})
	m := regexp.MustCompile(regexp.QuoteMeta(cmFile(13)) + `:(\d+)`).FindStringSubmatch(ready.Message)
	if m == nil {
		t.Fatalf("Ready message does not name %s:LINE: %q", cmFile(13), ready.Message)
	}
	if line, _ := strconv.Atoi(m[1]); line < brokenLine || line > brokenLine+4 {
		t.Errorf("Ready message names line %d, the broken line is %d: %q", line, brokenLine, ready.Message)
	}
	t.Logf("Ready=False: %s", ready.Message)
	// Nothing of revision 1 deleted or changed; self-heal still on.
	if err := sameAsGit(ns, wantValues(n, gitValues)); err != nil {
		t.Fatalf("a broken revision changed the cluster: %v", err)
	}
	if err := patchValue(alice, ns, cmName(280), "edit-during-broken"); err != nil {
		t.Fatal(err)
	}
	waitValue(t, g, ns, cmName(280), gitValue)
	wait.Eventually(t, 10*time.Second, "render error record", func() error {
		for _, r := range g.records() {
			if r.Type == audit.Error && r.Operation == "RENDER" && r.Source != nil && r.Source.Path == cmFile(13) && r.Source.Line > 0 && r.Source.Revision == rev2 {
				return nil
			}
		}
		return fmt.Errorf("no error record naming %s and a line", cmFile(13))
	})

	// Revision 3 repairs the file: applied, and the removed files pruned.
	rev3 := commit(t, repo, "repaired", map[string]string{cmFile(13): files[cmFile(13)]})
	if err := g.proc().NotifyPush(t.Context(), git.URL(name)); err != nil {
		t.Fatal(err)
	}
	waitApplied(t, g, name, rev3, 250, 90*time.Second)
	if err := sameAsGit(ns, wantValues(250, changed)); err != nil {
		t.Fatal(err)
	}
	recs := g.records()
	pruned := 0
	for _, r := range recs {
		if r.Type == audit.Prune && r.Object.Namespace == ns {
			pruned++
		}
	}
	if pruned != 50 {
		t.Errorf("%d prune records, want 50", pruned)
	}
	if len(byToken(recs, audit.Revert)["edit-during-broken"]) == 0 {
		t.Errorf("no revert record for the edit made while the revision was broken")
	}
	waitSameRecords(t, g, 0)
}

package faults

import (
	"fmt"
	"github.com/driftguard/driftguard/api/v1alpha1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/driftguard/driftguard/audit"
	"github.com/driftguard/driftguard/test/wait"
)

// TestAuditFileSinkDiskFull: the audit file is on a full disk (a symlink to
// /dev/full: every write fails with ENOSPC; the tests run as root, for whom
// a read-only file is still writable). The guard goes on guarding, says so
// in its log and metrics, and every record is still on stdout.
func TestAuditFileSinkDiskFull(t *testing.T) {
	const ns, name, n = "fault-auditdisk", "fault-auditdisk", 10
	if _, err := os.Stat("/dev/full"); err != nil {
		t.Skipf("no /dev/full on this system: %v", err)
	}
	dir := guardDir(t)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/dev/full", filepath.Join(dir, "audit.log")); err != nil {
		t.Fatal(err)
	}
	namespace(t, ns)
	_, rev := newRepo(t, name, cmFiles(ns, n, n, gitValues))
	g := startGuard(t, "--webhook-register=false")
	createGuard(t, name)
	waitApplied(t, g, name, rev, n, 60*time.Second)

	var tokens []string
	for i := range n {
		tok := fmt.Sprintf("full-disk-%02d", i)
		tokens = append(tokens, tok)
		if err := patchValue(alice, ns, cmName(i), tok); err != nil {
			t.Fatal(err)
		}
	}
	wait.Eventually(t, 60*time.Second, "every ConfigMap back to Git", func() error {
		g.alive()
		return sameAsGit(ns, wantValues(n, gitValues))
	})
	// Every record on stdout.
	wait.Eventually(t, 30*time.Second, "drift and revert records on stdout", func() error {
		recs := g.records()
		drifts, reverts := byToken(recs, audit.Drift), byToken(recs, audit.Revert)
		for _, tok := range tokens {
			if len(drifts[tok]) == 0 || len(reverts[tok]) == 0 {
				return fmt.Errorf("%s: %d drift, %d revert records", tok, len(drifts[tok]), len(reverts[tok]))
			}
		}
		if got := len(applied(recs, ns)); got != n {
			return fmt.Errorf("%d apply records, want %d", got, n)
		}
		return nil
	})
	// Reported: metric and log; nothing counted as dropped (stdout took it).
	wait.Eventually(t, 30*time.Second, "file sink failure reported", func() error {
		v, err := g.proc().Metric("driftguard_audit_sink_errors_total", `sink="file"`)
		if err != nil || v == 0 {
			return fmt.Errorf("driftguard_audit_sink_errors_total{sink=\"file\"} = %v, %v", v, err)
		}
		if !g.proc().LogContains("audit sink did not take records") || !g.proc().LogContains("no space left on device") {
			return fmt.Errorf("no log line about the file sink failing")
		}
		return nil
	})
	// And on the Guard, at its next reconcile (interval 30 s).
	wait.Eventually(t, 75*time.Second, "AuditSinks condition", func() error {
		gd, err := getGuard(name)
		if err != nil {
			return err
		}
		c := meta.FindStatusCondition(gd.Status.Conditions, v1alpha1.ConditionAuditSinks)
		if c == nil || c.Status != metav1.ConditionFalse || !strings.Contains(c.Message, "file: ") || !strings.Contains(c.Message, "no space left on device") {
			return fmt.Errorf("condition %+v", c)
		}
		return nil
	})
	if v, err := g.proc().Metric("driftguard_audit_dropped_total"); err != nil || v != 0 {
		t.Errorf("driftguard_audit_dropped_total = %v, %v; want 0: stdout took every record", v, err)
	}
	for _, line := range strings.Split(readLog(t, g), "\n") {
		if strings.Contains(line, "audit sink did not take records") && !strings.Contains(line, `"sink":"file"`) {
			t.Errorf("a sink other than the file failed: %s", line)
		}
	}
}

// guardDir is the folder startGuard gives t's guard.
func guardDir(t *testing.T) string {
	return filepath.Join(workDir, strings.ReplaceAll(t.Name(), "/", "_"))
}

func readLog(t *testing.T, g *guardProc) string {
	t.Helper()
	b, err := os.ReadFile(g.proc().LogPath)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

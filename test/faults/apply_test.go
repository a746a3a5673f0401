package faults

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/driftguard/driftguard/apply"
	"github.com/driftguard/driftguard/audit"
	"github.com/driftguard/driftguard/test/wait"
)

// applyObjects is the size of the apply the API server restart and the
// guard's kill interrupt.
const applyObjects = 1000

// TestAPIServerRestartDuringApply: kube-apiserver is stopped while the guard
// applies 1,000 ConfigMaps and started again (same etcd, port and
// certificates) a few seconds later. The guard, still running, finishes the
// apply; every ConfigMap is as in Git and has its apply record in both
// sinks.
func TestAPIServerRestartDuringApply(t *testing.T) {
	const ns, name = "fault-apiserver", "fault-apiserver"
	namespace(t, ns)
	_, rev := newRepo(t, name, cmFiles(ns, applyObjects, 25, gitValues))
	g := startGuard(t, "--webhook-register=false")
	createGuard(t, name)
	waitFor(t, g, ns, applyObjects/5)

	if err := cluster.StopAPIServer(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(3 * time.Second) // the outage: the guard runs on and retries
	g.alive()
	if err := cluster.StartAPIServer(context.Background()); err != nil {
		t.Fatal(err)
	}
	n, err := countConfigMaps(ns)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("kube-apiserver restarted with %d of %d ConfigMaps applied", n, applyObjects)
	if n >= applyObjects {
		t.Fatalf("the apply had finished before the restart (%d ConfigMaps): the fault was not injected", n)
	}

	waitApplied(t, g, name, rev, applyObjects, 3*time.Minute)
	if err := sameAsGit(ns, wantValues(applyObjects, gitValues)); err != nil {
		t.Fatal(err)
	}
	checkApplyRecords(t, g, ns, 0)
	// An unreachable API server stops the apply at the first object: each
	// retry during the outage is one error record, not one per object left.
	if errs := len(errorRecords(g.records(), ns)); errs > 100 {
		t.Errorf("%d error records for an outage of a few seconds: the apply went on object by object", errs)
	}
}

// TestGuardKilledDuringApply: the guard process gets SIGKILL while it
// applies 1,000 ConfigMaps, and is started again with the same flags and
// Git cache. The new process finishes the apply; every ConfigMap is as in
// Git, and every ConfigMap the new process created has its apply record.
//
// The reconciler records each object as it is applied, so the killed
// process loses only the records in flight when it died: those the API
// server had taken but the audit pipeline had not yet written (the next
// process finds those objects unchanged and has nothing to record).
func TestGuardKilledDuringApply(t *testing.T) {
	const ns, name = "fault-kill", "fault-kill"
	namespace(t, ns)
	_, rev := newRepo(t, name, cmFiles(ns, applyObjects, 25, gitValues))
	g := startGuard(t, "--webhook-register=false")
	createGuard(t, name)
	waitFor(t, g, ns, applyObjects/5)
	if err := g.proc().Kill(); err != nil {
		t.Fatal(err)
	}
	// Applies the killed process had sent may still be stored after it
	// died: the ConfigMaps it created are those there once the count
	// stops moving.
	before, err := settledConfigMapValues(ns)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("guard killed with %d of %d ConfigMaps applied", len(before), applyObjects)
	if len(before) >= applyObjects {
		t.Fatalf("the apply had finished before the kill (%d ConfigMaps): the fault was not injected", len(before))
	}
	g.start()
	waitApplied(t, g, name, rev, applyObjects, 3*time.Minute)
	if err := sameAsGit(ns, wantValues(applyObjects, gitValues)); err != nil {
		t.Fatal(err)
	}
	checkApplyRecords(t, g, ns, len(before))
	got := applied(g.records(), ns)
	lost := 0
	for i := range applyObjects {
		_, killed := before[cmName(i)]
		switch {
		case !got[cmName(i)] && !killed:
			t.Errorf("%s, created after the restart, has no apply record", cmName(i))
		case !got[cmName(i)]:
			lost++
		}
	}
	t.Logf("apply records lost with the killed process: %d of the %d ConfigMaps it created", lost, len(before))
	if lost > maxInFlight {
		t.Errorf("%d apply records lost with the killed process; only those in flight (at most %d) may be", lost, maxInFlight)
	}
}

// maxInFlight bounds the records a SIGKILL can take with it: the objects
// being applied at once (--apply-concurrency) and as many again in the
// audit queue's batch being written.
const maxInFlight = 2 * apply.DefaultConcurrency

// checkApplyRecords checks the audit trail of an apply of applyObjects
// ConfigMaps of ns: every line of the file sink is a record, the file holds
// what stdout got, and every ConfigMap has an apply record, except at most
// lost (applied by a process that was killed before it wrote them).
func checkApplyRecords(t *testing.T, g *guardProc, ns string, lost int) {
	t.Helper()
	wait.Eventually(t, 30*time.Second, "apply records of every ConfigMap", func() error {
		got := applied(g.records(), ns)
		if missing := applyObjects - len(got); missing > lost {
			return fmt.Errorf("%d ConfigMaps have no apply record on stdout (at most %d may be lost)", missing, lost)
		}
		return nil
	})
	for i, r := range g.recs {
		if bad := r.Malformed(); len(bad) > 0 {
			t.Errorf("process %d wrote %d malformed stdout lines, first %q", i, len(bad), bad[0])
		}
	}
	_, bad := g.fileRecords()
	if len(bad) > 0 {
		t.Errorf("%d malformed lines in the audit file, first %q", len(bad), bad[0])
	}
	killed := 0
	if lost > 0 {
		killed = maxInFlight
	}
	waitSameRecords(t, g, killed)
	t.Logf("%d apply records, %d error records", len(applied(g.records(), ns)), len(errorRecords(g.records(), ns)))
}

// errorRecords returns the error records about ConfigMaps of ns.
func errorRecords(recs []audit.Record, ns string) []audit.Record {
	var out []audit.Record
	for _, r := range recs {
		if r.Type == audit.Error && r.Object.Namespace == ns {
			out = append(out, r)
		}
	}
	return out
}

package faults

import (
	"context"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/driftguard/driftguard/audit"
)

// eventFloodShutdownBound is how long the guard may take to exit after
// SIGTERM with the Event sink far behind: its --audit-drain-timeout (5 s)
// and the rest of the shutdown, well inside the 30 s Kubernetes waits
// before SIGKILL. Before the drain time the guard went on sending Events
// for 35-49 s.
const eventFloodShutdownBound = 15 * time.Second

// TestEventFloodShutdown: the Event sink on (its own client at 20
// requests/s), alice's 1,000 edits of managed ConfigMaps in 10 s are
// denied by the webhook, one Event each: the Event sink falls far behind.
// Its failures are summed up in the log (a line per 10 s, not one per
// record), the guard exits within eventFloodShutdownBound of SIGTERM, says
// how many Events it did not send, and every decision is in the file sink.
func TestEventFloodShutdown(t *testing.T) {
	const ns, name, n, edits = "fault-eventflood", "fault-eventflood", 200, 1000
	namespace(t, ns)
	_, rev := newRepo(t, name, cmFiles(ns, n, 25, gitValues))
	g := startGuard(t, "--audit-events=true")
	createGuard(t, name)
	waitApplied(t, g, name, rev, n, 90*time.Second)
	g.waitWebhook(ns, cmName(0))

	targets := make([]int, edits)
	for i := range targets {
		targets[i] = rand.IntN(n)
	}
	floodBegan := time.Now()
	done := flood(alice, ns, "evflood", targets, 100)
	floodTook := time.Since(floodBegan)
	g.alive()
	var denied []edit
	for _, e := range done {
		if isDenied(e.err) {
			denied = append(denied, e)
		}
	}
	if len(denied) < edits/2 {
		t.Fatalf("only %d of %d edits denied: the flood did not make the records it should", len(denied), edits)
	}
	// SIGTERM at once: records still queued must reach the file.
	runBefore := time.Since(floodBegan)

	began := time.Now()
	if err := g.proc().Stop(); err != nil {
		t.Fatal(err)
	}
	took := time.Since(began)
	t.Logf("%d edits in %s, %d denied; guard exited %s after SIGTERM", edits, floodTook.Round(time.Millisecond), len(denied), took.Round(time.Millisecond))
	if took > eventFloodShutdownBound {
		t.Errorf("guard took %s to exit after SIGTERM, want at most %s", took.Round(time.Millisecond), eventFloodShutdownBound)
	}

	// Every record is in the file sink, as on stdout.
	file, bad := g.fileRecords()
	if len(bad) > 0 {
		t.Errorf("%d lines of the audit file are not records, first: %s", len(bad), bad[0])
	}
	if err := sameRecords(g.records(), file, time.Time{}, 0); err != nil {
		t.Error(err)
	}
	decisions := byToken(file, audit.Decision)
	for _, e := range denied {
		if !hasAction(decisions[e.token], "deny") {
			t.Errorf("denied edit %s has no deny record in the audit file", e.token)
		}
	}

	// Events were sent, and the rest counted, in one line each way.
	evs, err := kube.CoreV1().Events(ns).List(context.Background(), metav1.ListOptions{FieldSelector: "reason=Denied"})
	if err != nil {
		t.Fatal(err)
	}
	if len(evs.Items) == 0 {
		t.Error("no Denied Event in the namespace: the Event sink sent nothing")
	}
	log := readLog(t, g)
	var sinkLines, notSent []string
	for line := range strings.SplitSeq(log, "\n") {
		if strings.Contains(line, "audit sink did not take records") && strings.Contains(line, `"sink":"events"`) {
			sinkLines = append(sinkLines, line)
		}
		if strings.Contains(line, "not sent at shutdown") {
			notSent = append(notSent, line)
		}
	}
	// The first failure, one line per 10 s of the run, one at shutdown.
	if limit := 3 + int(runBefore/audit.FailureLogInterval); len(sinkLines) > limit {
		t.Errorf("%d log lines about the Event sink over %s, want at most %d (summed up per %s)",
			len(sinkLines), runBefore.Round(time.Second), limit, audit.FailureLogInterval)
	}
	if len(notSent) != 1 {
		t.Errorf("%d log lines saying which Events were not sent at shutdown, want 1 (the Event sink was %d Events behind at most):\n%s",
			len(notSent), len(denied)-len(evs.Items), strings.Join(notSent, "\n"))
	}
	t.Logf("%d Denied Events created for %d denials; %d log lines about the Event sink; at shutdown: %s",
		len(evs.Items), len(denied), len(sinkLines), strings.Join(notSent, ""))
}

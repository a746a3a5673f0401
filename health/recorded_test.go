package health

import (
	"bufio"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// recordedCases are the objects TestLiveCluster -record read from the
// simulated cluster (testdata/live-*.yaml), with the result expected at the
// time each was read; the last case of each kind with a deadline or window
// is assessed again after it.
var recordedCases = []struct {
	file  string
	after time.Duration // assessed this long after it was read
	want  Result
}{
	{"live-pod-failed.yaml", 0, Result{State: Degraded, Message: "failed: Error: failed on purpose (annotation driftguard.io/test-fail); container app exited with code 1 (Error)"}},
	{"live-pod-never-running.yaml", 0, Result{State: Progressing, Message: "running (restartPolicy Never: done when it succeeds)"}},
	{"live-pod-crashloop-terminated.yaml", 0, Result{State: Degraded, Message: "container app exited with code 1 (Error), restarted once"}},
	{"live-pod-crashloop-back-off.yaml", 0, Result{State: Degraded, Message: "container app exited with code 1 (Error), restarted once; CrashLoopBackOff: back-off 10s restarting failed container=app pod=crashloop_shop(892feb0c-b6f6-4d0c-8841-e449f64f8b6f)"}},
	{"live-pod-crashloop-running-again.yaml", 0, Result{State: Degraded, Message: "container app exited with code 1 (Error), restarted once; running again since 2026-12-04T01:17:37Z (counts as crash-looping until it has run 10m0s)"}},
	// Had it kept running (no further crash) for the window, it is fine.
	{"live-pod-crashloop-running-again.yaml", RestartWindow, Result{State: Healthy, Message: "running and ready"}},
	{"live-hpa-no-target.yaml", 0, Result{State: Degraded, Message: `cannot scale: FailedGetScale: the HPA controller was unable to get the target's current scale: deployments.apps "nope" not found`}},
	{"live-hpa-v1-no-target.yaml", 0, Result{State: Degraded, Message: `cannot scale: FailedGetScale: the HPA controller was unable to get the target's current scale: deployments.apps "nope-v1" not found`}},
	{"live-hpa-metrics-unavailable.yaml", 0, Result{State: Degraded, Message: "scaling not active: FailedGetResourceMetric: the HPA was unable to compute the replica count: failed to get cpu utilization: unable to get metrics for resource cpu: unable to fetch metrics from resource metrics API: the server could not find the requested resource (get pods.metrics.k8s.io)"}},
	{"live-apiservice-starting.yaml", 0, Result{State: Progressing, Message: `not available since 2026-12-04T01:17:53Z (Degraded from 2026-12-04T01:22:53Z): MissingEndpoints: endpointslices for service/nobody in "shop" have no addresses with port name ""`}},
	{"live-apiservice-starting.yaml", APIServiceStartDeadline, Result{State: Degraded, Message: `not available since 2026-12-04T01:17:53Z (more than 5m0s): MissingEndpoints: endpointslices for service/nobody in "shop" have no addresses with port name ""`}},
}

func TestRecordedFixtures(t *testing.T) {
	for _, tc := range recordedCases {
		t.Run(strings.TrimSuffix(tc.file, ".yaml")+"+"+tc.after.String(), func(t *testing.T) {
			at := recordedAt(t, tc.file).Add(tc.after)
			objs := readFixture(t, tc.file)
			got, err := assessAt(context.Background(), objs[0], Objects(objs), at)
			if got.State != tc.want.State || got.Message != tc.want.Message {
				t.Errorf("at %s: %s\n   want %s", at.Format(time.RFC3339), got, tc.want)
			}
			if err != nil {
				t.Errorf("error: %v", err)
			}
		})
	}
}

// recordedAt reads the time in the first line of a recorded fixture.
func recordedAt(t *testing.T, name string) time.Time {
	t.Helper()
	f, err := os.Open(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	line, err := bufio.NewReader(f).ReadString('\n')
	if err != nil || !strings.HasPrefix(line, recordedAtPrefix) {
		t.Fatalf("%s: first line %q (%v), want %q followed by a time", name, line, err, recordedAtPrefix)
	}
	at, err := time.Parse(time.RFC3339, strings.TrimSuffix(strings.Fields(line[len(recordedAtPrefix):])[0], ","))
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return at
}

package health

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// fixtureCases maps each fixture in testdata (its first object is the one
// assessed; the others are related objects) to the result expected with a
// lookup over the whole file.
var fixtureCases = []struct {
	file string
	want Result
}{
	{"deployment-healthy.yaml", Result{State: Healthy, Message: "3 of 3 replicas ready"}},
	{"deployment-progressing.yaml", Result{State: Progressing, Message: "1 of 3 replicas updated"}},
	{"deployment-old-replicas.yaml", Result{State: Progressing, Message: "1 old replica pending termination"}},
	{"deployment-deadline-exceeded.yaml", Result{State: Degraded, Message: `progress deadline exceeded: ReplicaSet "web-644bff49f6" has timed out progressing.`}},
	{"deployment-paused.yaml", Result{State: Suspended, Message: "rollout paused"}},
	{"deployment-stale-generation.yaml", Result{State: Progressing, Message: "generation 4 not yet observed by its controller (observed 3)"}},
	{"deployment-replica-failure.yaml", Result{State: Degraded, Message: `replica failure: FailedCreate: pods "web-8c96c8dfc-4x2lq" is forbidden: exceeded quota: compute, requested: pods=1, used: pods=10, limited: pods=10`}},
	{"deployment-scaled-to-zero.yaml", Result{State: Healthy, Message: "scaled to zero", NoPods: true}},
	// Scaled to zero, a replica still counted: its pods are read.
	{"deployment-scaling-to-zero.yaml", Result{State: Healthy, Message: "scaled to zero"}},
	{"deployment-terminating.yaml", Result{State: Progressing, Message: "terminating"}},
	{"deployment-bad-field.yaml", Result{State: Unknown, Message: "bad field: status.readyReplicas is a string, want an integer"}},

	{"statefulset-healthy.yaml", Result{State: Healthy, Message: "2 of 2 replicas ready"}},
	{"statefulset-progressing.yaml", Result{State: Progressing, Message: "1 of 3 replicas updated"}},
	{"statefulset-scaling.yaml", Result{State: Progressing, Message: "1 of 3 replicas ready"}},
	{"statefulset-partitioned.yaml", Result{State: Healthy, Message: "3 of 3 replicas ready, 1 updated (partition 2)"}},

	{"daemonset-healthy.yaml", Result{State: Healthy, Message: "3 of 3 pods ready"}},
	{"daemonset-progressing.yaml", Result{State: Progressing, Message: "1 of 3 pods updated"}},
	{"daemonset-stale-generation.yaml", Result{State: Progressing, Message: "generation 2 not yet observed by its controller (observed 1)"}},

	{"job-complete.yaml", Result{State: Healthy, Message: "completed (1 pod succeeded)"}},
	{"job-failed.yaml", Result{State: Degraded, Message: "failed: BackoffLimitExceeded: Job has reached the specified backoff limit"}},
	{"job-running.yaml", Result{State: Progressing, Message: "running: 1 active, 0 succeeded, 1 failed"}},
	{"job-suspended.yaml", Result{State: Suspended, Message: "suspended"}},

	{"service-clusterip-endpoints.yaml", Result{State: Healthy, Message: "3 ready endpoints"}},
	{"service-clusterip-endpoints-not-ready.yaml", Result{State: Progressing, Message: "none of 2 endpoints ready"}},
	{"service-clusterip-no-endpoints.yaml", Result{State: Progressing, Message: "no endpoints: no pod matches the selector"}},
	{"service-other-service-endpoints.yaml", Result{State: Progressing, Message: "no EndpointSlice labelled kubernetes.io/service-name=api"}},
	{"service-nodeport-endpoints.yaml", Result{State: Healthy, Message: "1 ready endpoint"}},
	{"service-no-selector.yaml", Result{State: Healthy, Message: "no selector: endpoints are not managed by Kubernetes"}},
	{"service-externalname.yaml", Result{State: Healthy, Message: "external name payments.example.net"}},
	{"service-loadbalancer-pending.yaml", Result{State: Progressing, Message: "waiting for a load balancer address"}},
	{"service-loadbalancer-ready.yaml", Result{State: Healthy, Message: "address 203.0.113.10, 2 ready endpoints"}},

	{"ingress-healthy.yaml", Result{State: Healthy, Message: "address a1b2c3d4e5f6-1234567890.eu-west-1.elb.amazonaws.com"}},
	{"ingress-progressing.yaml", Result{State: Progressing, Message: "waiting for an address from the ingress controller"}},

	{"pvc-bound.yaml", Result{State: Healthy, Message: "bound to volume pvc-2c8e6f0a-1d3b-4a5c-9e7f-0b1a2c3d4e5f"}},
	{"pvc-pending.yaml", Result{State: Progressing, Message: "pending: waiting for a volume"}},
	{"pvc-lost.yaml", Result{State: Degraded, Message: "lost: volume pvc-2c8e6f0a-1d3b-4a5c-9e7f-0b1a2c3d4e5f no longer exists"}},

	{"pod-running.yaml", Result{State: Healthy, Message: "running and ready"}},
	{"pod-running-not-ready.yaml", Result{State: Progressing, Message: "running, 0 of 1 containers ready"}},
	{"pod-succeeded.yaml", Result{State: Healthy, Message: "completed"}},
	{"pod-failed.yaml", Result{State: Degraded, Message: "failed: container migrate exited with code 2 (Error)"}},
	{"pod-evicted.yaml", Result{State: Degraded, Message: "failed: Evicted: The node was low on resource: ephemeral-storage. Threshold quantity: 1Gi, available: 512Mi."}},
	{"pod-crashloop.yaml", Result{State: Degraded, Message: "container web exited with code 1 (Error), restarted 6 times; CrashLoopBackOff: back-off 5m0s restarting failed container=web pod=web-8c96c8dfc-d8gcg_shop(75ff26a1-bf53-4925-bbd7-078995acb214)"}},
	{"pod-imagepullbackoff.yaml", Result{State: Degraded, Message: `container web: ImagePullBackOff: Back-off pulling image "nginx:1.99-typo"`}},
	{"pod-pending-unschedulable.yaml", Result{State: Progressing, Message: "not scheduled: Unschedulable: 0/1 nodes are available: 1 Insufficient cpu. preemption: 0/1 nodes are available: 1 No preemption victims found for incoming pod."}},

	{"crd-ready-true.yaml", Result{State: Healthy, Message: "Ready: Certificate is up to date and has not expired"}},
	{"crd-ready-false.yaml", Result{State: Degraded, Message: "not ready: BuildFailed: kustomize build failed: accumulating resources: accumulation err='accumulating resources from './web': open /tmp/kustomization-1234/apps/production/web: no such file or directory'"}},
	{"crd-ready-false-progressing.yaml", Result{State: Progressing, Message: "not ready: Progressing: Reconciliation in progress"}},
	{"crd-no-status.yaml", Result{State: NoHealth, Message: "no health information (no status): present"}},
	{"crd-stale-generation.yaml", Result{State: Progressing, Message: "generation 5 not yet observed by its controller (observed 4)"}},
	{"crd-suspended.yaml", Result{State: Suspended, Message: "suspended (spec.suspend is true)"}},
	{"crd-stalled.yaml", Result{State: Degraded, Message: `storage class "fast-ssd" not found`}},
	{"crd-reconciling.yaml", Result{State: Progressing, Message: "creating primary instance"}},
	{"crd-available-false.yaml", Result{State: Degraded, Message: "not available: QuorumLost: 0 of 3 members reachable"}},

	{"configmap.yaml", Result{State: Healthy, Message: "exists"}},
	{"clusterrole.yaml", Result{State: Healthy, Message: "exists"}},
	{"namespace-active.yaml", Result{State: Healthy, Message: "active"}},
	{"cronjob-suspended.yaml", Result{State: Suspended, Message: "suspended (spec.suspend is true)"}},
	{"replicaset-progressing.yaml", Result{State: Progressing, Message: "Available: 1/2"}},
}

func TestAssessFixtures(t *testing.T) {
	ctx := context.Background()
	for _, tc := range fixtureCases {
		t.Run(strings.TrimSuffix(tc.file, ".yaml"), func(t *testing.T) {
			objs := readFixture(t, tc.file)
			got, err := AssessWith(ctx, objs[0], Objects(objs))
			if got != tc.want {
				t.Errorf("AssessWith = %+v\n                  want %+v", got, tc.want)
			}
			if (err != nil) != (tc.want.State == Unknown) {
				t.Errorf("AssessWith error = %v; want an error only for Unknown", err)
			}

			// The same object decoded by encoding/json (float64 numbers)
			// is assessed the same way.
			floats := readFixtureFloats(t, tc.file)
			if got, _ := AssessWith(ctx, floats[0], Objects(floats)); got != tc.want {
				t.Errorf("with float64 numbers: AssessWith = %+v, want %+v", got, tc.want)
			}
		})
	}
}

// TestEveryFixtureHasACase keeps fixtures and cases in step.
func TestEveryFixtureHasACase(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	known := map[string]bool{}
	for _, tc := range fixtureCases {
		known[tc.file] = true
	}
	for _, f := range extraFixtures {
		known[f] = true
	}
	for _, tc := range recordedCases {
		known[tc.file] = true
	}
	for _, tc := range fieldCases {
		known[tc.file] = true
	}
	for _, f := range files {
		if !known[filepath.Base(f)] {
			t.Errorf("fixture %s has no case in fixtureCases", f)
		}
	}
	for name := range known {
		if _, err := os.Stat(filepath.Join("testdata", name)); err != nil {
			t.Errorf("case names a missing fixture: %v", err)
		}
	}
}

// extraFixtures are used by other tests (the CLI's) rather than fixtureCases.
var extraFixtures = []string{"list-shop.yaml"}

func TestAssessWithoutLookup(t *testing.T) {
	for _, tc := range []struct {
		file string
		want Result
	}{
		{"service-clusterip-endpoints.yaml", Result{State: Healthy, Message: "endpoints not checked"}},
		{"service-clusterip-no-endpoints.yaml", Result{State: Healthy, Message: "endpoints not checked"}},
		{"service-loadbalancer-ready.yaml", Result{State: Healthy, Message: "address 203.0.113.10, endpoints not checked"}},
		{"service-loadbalancer-pending.yaml", Result{State: Progressing, Message: "waiting for a load balancer address"}},
		{"deployment-healthy.yaml", Result{State: Healthy, Message: "3 of 3 replicas ready"}},
	} {
		t.Run(tc.file, func(t *testing.T) {
			if got := Assess(readFixture(t, tc.file)[0]); got != tc.want {
				t.Errorf("Assess = %+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestAssessMissing(t *testing.T) {
	if got, want := Assess(nil), (Result{State: Missing, Message: "not found"}); got != want {
		t.Errorf("Assess(nil) = %+v, want %+v", got, want)
	}
}

package health

import (
	"context"
	"testing"
	"time"
)

// fieldCases are objects as the API server returns them for workloads of
// public charts and kustomizations, in the states the field meets (written
// for driftguard in testdata/field-*.yaml). The first object of a file is
// assessed; the others (pods) are what a lookup finds. at is the time of
// the assessment (rules_test.go).
var fieldCases = []struct {
	file   string
	lookup bool // with the file's other objects as the lookup
	want   Result
	until  time.Time
}{
	{"field-deployment-rolling.yaml", false, Result{State: Progressing, Message: "2 of 3 replicas updated"}, time.Time{}},
	{"field-deployment-stuck.yaml", false, Result{State: Degraded, Message: `progress deadline exceeded: ReplicaSet "grafana-6c9b9d7f5" has timed out progressing.`}, time.Time{}},
	// Its status alone reads Healthy at the moment the pod runs again.
	{"field-deployment-crashloop.yaml", false, Result{State: Healthy, Message: "1 of 1 replicas ready"}, time.Time{}},
	{"field-deployment-crashloop.yaml", true, Result{State: Degraded, Message: "pod podinfo-7c9d8f6b5d-x2x8q: container podinfo exited with code 1 (Error), restarted 2 times; running again since 2026-12-04T01:29:51Z (counts as crash-looping until it has run 10m0s)"},
		time.Date(2026, 12, 4, 1, 39, 51, 0, time.UTC)},
	{"field-deployment-image-pull.yaml", false, Result{State: Progressing, Message: "1 of 2 replicas updated"}, time.Time{}},
	{"field-deployment-image-pull.yaml", true, Result{State: Degraded, Message: `pod ingress-nginx-controller-6f8b7d9c4-p9z5t: container controller: ImagePullBackOff: Back-off pulling image "registry.k8s.io/ingress-nginx/controller:v1.99.0"`}, time.Time{}},
	{"field-job-complete.yaml", false, Result{State: Healthy, Message: "completed (1 pod succeeded)"}, time.Time{}},
	{"field-job-failed.yaml", false, Result{State: Degraded, Message: "failed: BackoffLimitExceeded: Job has reached the specified backoff limit"}, time.Time{}},
	{"field-statefulset-updating.yaml", false, Result{State: Progressing, Message: "1 of 3 replicas updated"}, time.Time{}},
	{"field-daemonset.yaml", false, Result{State: Healthy, Message: "3 of 3 pods ready"}, time.Time{}},
	{"field-pvc-pending.yaml", false, Result{State: Progressing, Message: "pending: waiting for a volume"}, time.Time{}},
	{"field-ingress-no-address.yaml", false, Result{State: Progressing, Message: "waiting for an address from the ingress controller"}, time.Time{}},
	{"field-certificate-issuing.yaml", false, Result{State: Progressing, Message: "not ready (Issuing is True): DoesNotExist: Issuing certificate as Secret does not exist"}, time.Time{}},
	{"field-certificate-ready.yaml", false, Result{State: Healthy, Message: "Ready: Certificate is up to date and has not expired"}, time.Time{}},
	{"field-certificate-failed.yaml", false, Result{State: Degraded, Message: "not ready: DoesNotExist: Issuing certificate as Secret does not exist"}, time.Time{}},
	{"field-hpa-at-max.yaml", false, Result{State: Healthy, Message: "4 current, 4 desired replicas (min 2, max 4); limited: TooManyReplicas: the desired replica count is more than the maximum replica count"}, time.Time{}},
}

func TestFieldFixtures(t *testing.T) {
	for _, tc := range fieldCases {
		name := tc.file
		if tc.lookup {
			name += "+pods"
		}
		t.Run(name, func(t *testing.T) {
			objs := readFixture(t, tc.file)
			var lookup Lookup
			if tc.lookup {
				lookup = Objects(objs[1:])
			}
			got, err := assessAt(context.Background(), objs[0], lookup, at)
			if err != nil {
				t.Fatalf("error: %v", err)
			}
			if got.State != tc.want.State || got.Message != tc.want.Message {
				t.Errorf("assess = %s\n          want %s", got, tc.want)
			}
			if !got.Until.Equal(tc.until) {
				t.Errorf("Until = %v, want %v", got.Until, tc.until)
			}
		})
	}
}

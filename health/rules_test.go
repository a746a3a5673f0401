package health

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"
)

// at is the time the rules are assessed at in these tables.
var at = time.Date(2026, 12, 4, 1, 30, 0, 0, time.UTC)

// ago formats the time d before at as the API server writes it.
func ago(d time.Duration) string { return at.Add(-d).Format(time.RFC3339) }

type ruleCase struct {
	name      string
	src       string
	want      Result
	wantUntil time.Time
}

func runRuleCases(t *testing.T, cases []ruleCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			obj := parse(t, tc.src)
			got, err := assessAt(context.Background(), obj, nil, at)
			if got.State != tc.want.State || got.Message != tc.want.Message {
				t.Errorf("assess = %s\n          want %s", got, tc.want)
			}
			if !got.Until.Equal(tc.wantUntil) {
				t.Errorf("Until = %v, want %v", got.Until, tc.wantUntil)
			}
			if (err != nil) != (tc.want.State == Unknown) {
				t.Errorf("error = %v; want one only for Unknown", err)
			}
		})
	}
}

func hpaV2(spec, status string) string {
	return `
apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata: {name: web, namespace: shop, generation: 1}
spec:
  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: web}
  ` + spec + `
status:
  ` + status
}

func TestHorizontalPodAutoscaler(t *testing.T) {
	const limits = "minReplicas: 3\n  maxReplicas: 5"
	cond := func(typ, status, reason, msg string) string {
		return fmt.Sprintf("{type: %s, status: %q, reason: %s, message: %q, lastTransitionTime: %q}", typ, status, reason, msg, ago(time.Minute))
	}
	able := cond("AbleToScale", "True", "SucceededGetScale", "the HPA controller was able to get the target's current scale")
	noScale := cond("AbleToScale", "False", "FailedGetScale", `the HPA controller was unable to get the target's current scale: deployments.apps "web" not found`)
	active := cond("ScalingActive", "True", "ValidMetricFound", "the HPA was able to successfully calculate a replica count from cpu resource utilization (percentage of request)")
	noMetrics := cond("ScalingActive", "False", "FailedGetResourceMetric", "the HPA was unable to compute the replica count: failed to get cpu utilization: unable to get metrics for resource cpu: unable to fetch metrics from resource metrics API: the server could not find the requested resource (get pods.metrics.k8s.io)")
	disabled := cond("ScalingActive", "False", "ScalingDisabled", "scaling is disabled since the replica count of the target is zero")
	limited := cond("ScalingLimited", "True", "TooFewReplicas", "the desired replica count is less than the minimum replica count")
	notLimited := cond("ScalingLimited", "False", "DesiredWithinRange", "the desired count is within the acceptable range")
	v1 := func(annotation string) string {
		return `
apiVersion: autoscaling/v1
kind: HorizontalPodAutoscaler
metadata:
  name: web
  namespace: shop
  annotations:
    autoscaling.alpha.kubernetes.io/conditions: |-
      ` + annotation + `
spec: {scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: web}, minReplicas: 2, maxReplicas: 4, targetCPUUtilizationPercentage: 80}
status: {currentReplicas: 2, desiredReplicas: 2}`
	}
	runRuleCases(t, []ruleCase{
		{name: "target not found", src: hpaV2(limits, "{currentReplicas: 0, desiredReplicas: 0, conditions: ["+noScale+"]}"),
			want: Result{State: Degraded, Message: `cannot scale: FailedGetScale: the HPA controller was unable to get the target's current scale: deployments.apps "web" not found`}},
		{name: "metrics unavailable", src: hpaV2(limits, "{currentReplicas: 3, desiredReplicas: 3, conditions: ["+able+", "+noMetrics+", "+limited+"]}"),
			want: Result{State: Degraded, Message: "scaling not active: FailedGetResourceMetric: the HPA was unable to compute the replica count: failed to get cpu utilization: unable to get metrics for resource cpu: unable to fetch metrics from resource metrics API: the server could not find the requested resource (get pods.metrics.k8s.io)"}},
		{name: "target scaled to zero", src: hpaV2(limits, "{currentReplicas: 0, desiredReplicas: 0, conditions: ["+able+", "+disabled+"]}"),
			want: Result{State: Suspended, Message: "scaling disabled: scaling is disabled since the replica count of the target is zero"}},
		{name: "scaling, held at its minimum", src: hpaV2(limits, "{currentReplicas: 3, desiredReplicas: 3, conditions: ["+able+", "+active+", "+limited+"]}"),
			want: Result{State: Healthy, Message: "3 current, 3 desired replicas (min 3, max 5); limited: TooFewReplicas: the desired replica count is less than the minimum replica count"}},
		{name: "scaling within range", src: hpaV2(limits, "{currentReplicas: 4, desiredReplicas: 4, conditions: ["+able+", "+active+", "+notLimited+"]}"),
			want: Result{State: Healthy, Message: "4 current, 4 desired replicas (min 3, max 5)"}},
		{name: "no conditions yet", src: hpaV2(limits, "{currentReplicas: 0, desiredReplicas: 0}"),
			want: Result{State: Progressing, Message: "waiting for the autoscaler controller to assess it"}},
		{name: "ability unknown", src: hpaV2(limits, "{conditions: ["+cond("AbleToScale", "Unknown", "Pending", "")+"]}"),
			want: Result{State: Progressing, Message: "ability to scale unknown: Pending"}},
		{name: "generation not observed", src: strings.Replace(hpaV2(limits, "{observedGeneration: 1, conditions: ["+able+", "+active+"]}"), "generation: 1", "generation: 2", 1),
			want: Result{State: Progressing, Message: "generation 2 not yet observed by its controller (observed 1)"}},
		{name: "v1: target not found (conditions annotation)", src: v1(`[{"type":"AbleToScale","status":"False","lastTransitionTime":"2026-12-04T01:29:00Z","reason":"FailedGetScale","message":"the HPA controller was unable to get the target's current scale: deployments.apps \"web\" not found"}]`),
			want: Result{State: Degraded, Message: `cannot scale: FailedGetScale: the HPA controller was unable to get the target's current scale: deployments.apps "web" not found`}},
		{name: "v1: scaling", src: v1(`[{"type":"AbleToScale","status":"True","reason":"ReadyForNewScale"},{"type":"ScalingActive","status":"True","reason":"ValidMetricFound"}]`),
			want: Result{State: Healthy, Message: "2 current, 2 desired replicas (min 2, max 4)"}},
		{name: "v1: annotation not JSON", src: v1(`[{"type":`),
			want: Result{State: Unknown, Message: "bad field: metadata.annotations[autoscaling.alpha.kubernetes.io/conditions]: unexpected end of JSON input"}},
		{name: "v1: condition status of the wrong type", src: v1(`[{"type":"AbleToScale","status":false}]`),
			want: Result{State: Unknown, Message: "bad field: metadata.annotations[autoscaling.alpha.kubernetes.io/conditions][0].status is a boolean, want a string"}},
	})
}

func TestAPIService(t *testing.T) {
	svc := func(conditions string) string {
		return `
apiVersion: apiregistration.k8s.io/v1
kind: APIService
metadata: {name: v1beta1.metrics.k8s.io}
spec: {group: metrics.k8s.io, version: v1beta1, service: {name: metrics-server, namespace: kube-system, port: 443}, groupPriorityMinimum: 100, versionPriority: 100}
status: {conditions: ` + conditions + `}`
	}
	unavailable := func(since string) string {
		return svc(`[{type: Available, status: "False", reason: MissingEndpoints, message: "endpoints for service/metrics-server in \"kube-system\" have no addresses with port name \"https\"", lastTransitionTime: "` + since + `"}]`)
	}
	const why = `MissingEndpoints: endpoints for service/metrics-server in "kube-system" have no addresses with port name "https"`
	runRuleCases(t, []ruleCase{
		{name: "available", src: svc(`[{type: Available, status: "True", reason: Passed, message: all checks passed, lastTransitionTime: "` + ago(time.Hour) + `"}]`),
			want: Result{State: Healthy, Message: "Passed: all checks passed"}},
		{name: "local", src: svc(`[{type: Available, status: "True", reason: Local, message: Local APIServices are always available}]`),
			want: Result{State: Healthy, Message: "Local: Local APIServices are always available"}},
		{name: "starting", src: unavailable(ago(time.Minute)),
			want:      Result{State: Progressing, Message: "not available since 2026-12-04T01:29:00Z (Degraded from 2026-12-04T01:34:00Z): " + why},
			wantUntil: at.Add(4 * time.Minute)},
		{name: "deadline just reached", src: unavailable(ago(APIServiceStartDeadline)),
			want: Result{State: Degraded, Message: "not available since 2026-12-04T01:25:00Z (more than 5m0s): " + why}},
		{name: "down for an hour", src: unavailable(ago(time.Hour)),
			want: Result{State: Degraded, Message: "not available since 2026-12-04T00:30:00Z (more than 5m0s): " + why}},
		{name: "no transition time", src: svc(`[{type: Available, status: "False", reason: FailedDiscoveryCheck, message: "failing or missing response"}]`),
			want: Result{State: Degraded, Message: "not available: FailedDiscoveryCheck: failing or missing response"}},
		{name: "not checked yet", src: svc(`[]`),
			want: Result{State: Progressing, Message: "waiting for the aggregator to check its service"}},
		{name: "transition time not a time", src: svc(`[{type: Available, status: "False", lastTransitionTime: yesterday}]`),
			want: Result{State: Unknown, Message: `bad field: status.conditions[0].lastTransitionTime is "yesterday", want an RFC 3339 time`}},
	})
}

// podWith is a pod of one container web with restartPolicy policy, phase
// phase, Ready ready and the container status cs.
func podWith(policy, phase, ready, cs string) string {
	return `
apiVersion: v1
kind: Pod
metadata: {name: web-7d9c6b5f4-x2x7q, namespace: shop}
spec: {restartPolicy: ` + policy + `, containers: [{name: web, image: "nginx:1.27"}]}
status:
  phase: ` + phase + `
  conditions: [{type: Ready, status: "` + ready + `"}]
  containerStatuses: [` + cs + `]`
}

func TestPodRestarts(t *testing.T) {
	const lastErr = `lastState: {terminated: {exitCode: 1, reason: Error, startedAt: "2026-12-04T01:28:00Z", finishedAt: "2026-12-04T01:28:05Z"}}`
	waiting := `{name: web, ready: false, restartCount: 4, ` + lastErr + `, state: {waiting: {reason: CrashLoopBackOff, message: "back-off 1m20s restarting failed container=web pod=web-7d9c6b5f4-x2x7q_shop(0d1c)"}}}`
	terminated := `{name: web, ready: false, restartCount: 4, ` + lastErr + `, state: {terminated: {exitCode: 1, reason: Error, startedAt: "2026-12-04T01:29:30Z", finishedAt: "2026-12-04T01:29:35Z"}}}`
	runningSince := func(d time.Duration) string {
		return `{name: web, ready: true, restartCount: 5, ` + lastErr + `, state: {running: {startedAt: "` + ago(d) + `"}}}`
	}
	runRuleCases(t, []ruleCase{
		// One crash loop, seen at each step of its cycle: Degraded at every
		// one, never Progressing or Healthy between two back-offs.
		{name: "crash loop: terminated", src: podWith("Always", "Running", "False", terminated),
			want: Result{State: Degraded, Message: "container web exited with code 1 (Error), restarted 4 times"}},
		{name: "crash loop: back-off", src: podWith("Always", "Running", "False", waiting),
			want: Result{State: Degraded, Message: "container web exited with code 1 (Error), restarted 4 times; CrashLoopBackOff: back-off 1m20s restarting failed container=web pod=web-7d9c6b5f4-x2x7q_shop(0d1c)"}},
		{name: "crash loop: running again, Ready", src: podWith("Always", "Running", "True", runningSince(10*time.Second)),
			want:      Result{State: Degraded, Message: "container web exited with code 1 (Error), restarted 5 times; running again since 2026-12-04T01:29:50Z (counts as crash-looping until it has run 10m0s)"},
			wantUntil: at.Add(RestartWindow - 10*time.Second)},
		{name: "crash loop: first back-off, not restarted yet", src: podWith("Always", "Running", "False", strings.Replace(waiting, "restartCount: 4", "restartCount: 0", 1)),
			want: Result{State: Degraded, Message: "container web exited with code 1 (Error); CrashLoopBackOff: back-off 1m20s restarting failed container=web pod=web-7d9c6b5f4-x2x7q_shop(0d1c)"}},
		{name: "restarted long ago, running since", src: podWith("Always", "Running", "True", runningSince(RestartWindow)),
			want: Result{State: Healthy, Message: "running and ready"}},
		{name: "first exit, not restarted yet", src: podWith("Always", "Running", "False", `{name: web, ready: false, restartCount: 0, state: {terminated: {exitCode: 137, reason: OOMKilled}}}`),
			want: Result{State: Degraded, Message: "container web exited with code 137 (OOMKilled)"}},
		{name: "Always: a container that completes is restarted too", src: podWith("Always", "Running", "False", `{name: web, ready: false, restartCount: 2, state: {terminated: {exitCode: 0, reason: Completed}}}`),
			want: Result{State: Degraded, Message: "container web exited with code 0 (Completed), restarted 2 times"}},

		{name: "Never: running", src: podWith("Never", "Running", "True", `{name: web, ready: true, restartCount: 0, state: {running: {startedAt: "`+ago(time.Minute)+`"}}}`),
			want: Result{State: Progressing, Message: "running (restartPolicy Never: done when it succeeds)"}},
		{name: "Never: a container exited non-zero, the pod not yet Failed", src: podWith("Never", "Running", "False", `{name: web, ready: false, restartCount: 0, state: {terminated: {exitCode: 2, reason: Error}}}`),
			want: Result{State: Degraded, Message: "container web exited with code 2 (Error) (restartPolicy Never: it will not run again)"}},
		{name: "Never: a container done, the pod not yet Succeeded", src: podWith("Never", "Running", "False", `{name: web, ready: false, restartCount: 0, state: {terminated: {exitCode: 0, reason: Completed}}}`),
			want: Result{State: Progressing, Message: "running (restartPolicy Never: done when it succeeds)"}},
		{name: "Never: succeeded", src: podWith("Never", "Succeeded", "False", `{name: web, ready: false, restartCount: 0, state: {terminated: {exitCode: 0, reason: Completed}}}`),
			want: Result{State: Healthy, Message: "completed"}},
		{name: "Never: failed", src: podWith("Never", "Failed", "False", `{name: web, ready: false, restartCount: 0, state: {terminated: {exitCode: 3, reason: Error, message: "migration 42 failed"}}}`),
			want: Result{State: Degraded, Message: "failed: container web exited with code 3 (Error): migration 42 failed"}},

		{name: "OnFailure: running", src: podWith("OnFailure", "Running", "True", `{name: web, ready: true, restartCount: 0, state: {running: {startedAt: "`+ago(time.Minute)+`"}}}`),
			want: Result{State: Progressing, Message: "running (restartPolicy OnFailure: done when it succeeds)"}},
		{name: "OnFailure: back-off after failures", src: podWith("OnFailure", "Running", "False", waiting),
			want: Result{State: Degraded, Message: "container web exited with code 1 (Error), restarted 4 times; CrashLoopBackOff: back-off 1m20s restarting failed container=web pod=web-7d9c6b5f4-x2x7q_shop(0d1c)"}},
		{name: "OnFailure: running again after a failure", src: podWith("OnFailure", "Running", "True", runningSince(time.Minute)),
			want:      Result{State: Degraded, Message: "container web exited with code 1 (Error), restarted 5 times; running again since 2026-12-04T01:29:00Z (counts as crash-looping until it has run 10m0s)"},
			wantUntil: at.Add(RestartWindow - time.Minute)},
		{name: "OnFailure: succeeded after restarts", src: podWith("OnFailure", "Succeeded", "False", `{name: web, ready: false, restartCount: 2, `+lastErr+`, state: {terminated: {exitCode: 0, reason: Completed}}}`),
			want: Result{State: Healthy, Message: "completed"}},
		{name: "OnFailure: failed (deadline)", src: strings.Replace(podWith("OnFailure", "Failed", "False", `{name: web, ready: false, restartCount: 3, state: {terminated: {exitCode: 137, reason: Error}}}`), "phase: Failed", "phase: Failed\n  reason: DeadlineExceeded\n  message: Pod was active on the node longer than the specified deadline", 1),
			want: Result{State: Degraded, Message: "failed: DeadlineExceeded: Pod was active on the node longer than the specified deadline; container web exited with code 137 (Error), restarted 3 times"}},
		{name: "running again, start time not a time", src: podWith("Always", "Running", "True", `{name: web, ready: true, restartCount: 1, `+lastErr+`, state: {running: {startedAt: "soon"}}}`),
			want: Result{State: Unknown, Message: `bad field: status.containerStatuses[0].state.running.startedAt is "soon", want an RFC 3339 time`}},
	})
}

func TestGenericShapes(t *testing.T) {
	cr := func(apiVersion, kind, metaExtra, status string) string {
		return `
apiVersion: ` + apiVersion + `
kind: ` + kind + `
metadata: {name: x, namespace: shop` + metaExtra + `}
spec: {}
` + status
	}
	runRuleCases(t, []ruleCase{
		{name: "Argo CD Application: status.health Degraded", src: cr("argoproj.io/v1alpha1", "Application", "", `status: {health: {status: Degraded, message: "Deployment shop/web: progress deadline exceeded"}, sync: {status: Synced}}`),
			want: Result{State: Degraded, Message: "Deployment shop/web: progress deadline exceeded"}},
		{name: "status.health without a message", src: cr("argoproj.io/v1alpha1", "Application", "", `status: {health: {status: Healthy}}`),
			want: Result{State: Healthy, Message: "status.health.status is Healthy"}},
		{name: "status.health Missing: the object is there, its resources are not yet", src: cr("argoproj.io/v1alpha1", "Application", "", `status: {health: {status: Missing}, sync: {status: OutOfSync}}`),
			want: Result{State: Progressing, Message: "missing resources: status.health.status is Missing"}},
		{name: "status.health of another vocabulary is not read", src: cr("example.com/v1", "Widget", "", `status: {health: {status: green}}`),
			want: Result{State: NoHealth, Message: "no health information (no conditions, phase, health or observedGeneration in its status): present"}},
		{name: "Argo Workflow failed", src: cr("argoproj.io/v1alpha1", "Workflow", "", `status: {phase: Failed, message: "child 'build-3127' failed", startedAt: "`+ago(time.Hour)+`"}`),
			want: Result{State: Degraded, Message: "phase Failed: child 'build-3127' failed"}},
		{name: "Argo Workflow errored", src: cr("argoproj.io/v1alpha1", "Workflow", "", `status: {phase: Error, message: "pod deleted"}`),
			want: Result{State: Degraded, Message: "phase Error: pod deleted"}},
		{name: "Argo Workflow running", src: cr("argoproj.io/v1alpha1", "Workflow", "", `status: {phase: Running, progress: 1/3}`),
			want: Result{State: Progressing, Message: "phase Running"}},
		{name: "Argo Workflow succeeded", src: cr("argoproj.io/v1alpha1", "Workflow", "", `status: {phase: Succeeded, progress: 3/3}`),
			want: Result{State: Healthy, Message: "phase Succeeded"}},
		{name: "phase with a reason", src: cr("example.com/v1", "Backup", "", `status: {phase: failed, reason: "bucket not found"}`),
			want: Result{State: Degraded, Message: "phase failed: bucket not found"}},
		{name: "phase the rules do not know", src: cr("example.com/v1", "Widget", "", `status: {phase: Blue}`),
			want: Result{State: NoHealth, Message: "no health information (status.phase Blue is not a phase the rules know): present"}},
		{name: "observedGeneration caught up", src: cr("example.com/v1", "Widget", ", generation: 3", `status: {observedGeneration: 3}`),
			want: Result{State: Healthy, Message: "generation 3 observed by its controller, which reports no conditions"}},
		{name: "observedGeneration behind", src: cr("example.com/v1", "Widget", ", generation: 3", `status: {observedGeneration: 2}`),
			want: Result{State: Progressing, Message: "generation 3 not yet observed by its controller (observed 2)"}},
		{name: "ServiceMonitor: no status", src: cr("monitoring.coreos.com/v1", "ServiceMonitor", ", generation: 1", ``),
			want: Result{State: NoHealth, Message: "no health information (no status): present"}},
		{name: "empty status", src: cr("example.com/v1", "Widget", "", `status: {}`),
			want: Result{State: NoHealth, Message: "no health information (no status): present"}},
		{name: "built-in kind without status", src: `
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingWebhookConfiguration
metadata: {name: x, generation: 1}
webhooks: []`,
			want: Result{State: Healthy, Message: "exists"}},
		{name: "Reconciling and Stalled both False", src: cr("example.com/v1", "Widget", "", `status: {conditions: [{type: Reconciling, status: "False"}, {type: Stalled, status: "False"}]}`),
			want: Result{State: Healthy, Message: "no Reconciling or Stalled condition is True"}},
		{name: "conditions win over phase", src: cr("example.com/v1", "Widget", "", `status: {phase: Running, conditions: [{type: Ready, status: "True", reason: Up}]}`),
			want: Result{State: Healthy, Message: "Up"}},
	})
}

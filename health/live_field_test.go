package health

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/driftguard/driftguard/devenv"
	"github.com/driftguard/driftguard/test/wait"
)

// recordFixtures makes TestLiveCluster write the objects it assesses in
// fieldManifests into testdata/live-*.yaml (go test ./health -run
// TestLiveCluster -record), where TestRecordedFixtures reads them.
var recordFixtures = flag.Bool("record", false, "write the live objects of TestLiveCluster into testdata/live-*.yaml")

// fieldManifests are objects whose health the field got wrong: pods that
// crash-loop, fail or run to completion, autoscalers that cannot work.
// They are applied to the simulated cluster beside liveManifests.
var fieldManifests = fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata:
  name: crashloop
  namespace: shop
  annotations: {%[1]s: "true"}
spec:
  restartPolicy: Always
  containers: [{name: app, image: "busybox:1.37", command: [sh, -c, "exit 1"]}]
---
apiVersion: v1
kind: Pod
metadata:
  name: fails
  namespace: shop
  annotations: {%[2]s: "true"}
spec:
  restartPolicy: Never
  containers: [{name: app, image: "busybox:1.37", command: [sh, -c, "exit 1"]}]
---
apiVersion: v1
kind: Pod
metadata: {name: runs-once, namespace: shop}
spec:
  restartPolicy: Never
  containers: [{name: app, image: "busybox:1.37", command: [sleep, "3600"]}]
---
apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata: {name: no-target, namespace: shop}
spec:
  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: nope}
  minReplicas: 1
  maxReplicas: 3
  metrics: [{type: Resource, resource: {name: cpu, target: {type: Utilization, averageUtilization: 80}}}]
---
apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata: {name: web-cpu, namespace: shop}
spec:
  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: web}
  minReplicas: 3
  maxReplicas: 5
  metrics: [{type: Resource, resource: {name: cpu, target: {type: Utilization, averageUtilization: 80}}}]
---
apiVersion: autoscaling/v1
kind: HorizontalPodAutoscaler
metadata: {name: no-target-v1, namespace: shop}
spec:
  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: nope-v1}
  minReplicas: 1
  maxReplicas: 2
  targetCPUUtilizationPercentage: 50
`, devenv.CrashLoopPodAnnotation, devenv.FailPodAnnotation)

// apiServiceManifest is an aggregated API whose Service (nobody, in
// liveManifests) has no endpoints. It is applied last and deleted at the
// end: an unavailable API group makes discovery incomplete for everyone.
const apiServiceManifest = `apiVersion: apiregistration.k8s.io/v1
kind: APIService
metadata: {name: v1alpha1.field.example.com}
spec:
  group: field.example.com
  version: v1alpha1
  service: {name: nobody, namespace: shop, port: 80}
  groupPriorityMinimum: 1000
  versionPriority: 15
  insecureSkipTLSVerify: true
`

// checkField asserts the health of fieldManifests' objects on the live
// cluster and, with -record, writes them to testdata.
func checkField(t *testing.T, ctx context.Context, cluster *devenv.Cluster, c client.Client) {
	get := func(ctx context.Context, gvk schema.GroupVersionKind, namespace, name string) (*unstructured.Unstructured, error) {
		obj := &unstructured.Unstructured{}
		obj.SetGroupVersionKind(gvk)
		if err := c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, obj); err != nil {
			return nil, err
		}
		return obj, nil
	}
	pod := schema.GroupVersionKind{Version: "v1", Kind: "Pod"}
	hpa2 := schema.GroupVersionKind{Group: "autoscaling", Version: "v2", Kind: "HorizontalPodAutoscaler"}
	hpa1 := schema.GroupVersionKind{Group: "autoscaling", Version: "v1", Kind: "HorizontalPodAutoscaler"}
	for _, tc := range []struct {
		gvk     schema.GroupVersionKind
		name    string
		state   State
		message string // a prefix of the message
		file    string // testdata/live-FILE.yaml with -record
	}{
		{pod, "fails", Degraded, "failed: Error: failed on purpose (annotation driftguard.io/test-fail); container app exited with code 1 (Error)", "pod-failed"},
		{pod, "runs-once", Progressing, "running (restartPolicy Never: done when it succeeds)", "pod-never-running"},
		{hpa2, "no-target", Degraded, `cannot scale: FailedGetScale: the HPA controller was unable to get the target's current scale: deployments.apps "nope" not found`, "hpa-no-target"},
		{hpa2, "web-cpu", Degraded, "scaling not active: FailedGetResourceMetric: ", "hpa-metrics-unavailable"},
		{hpa1, "no-target-v1", Degraded, `cannot scale: FailedGetScale: the HPA controller was unable to get the target's current scale: deployments.apps "nope-v1" not found`, "hpa-v1-no-target"},
	} {
		wait.Eventually(t, 90*time.Second, fmt.Sprintf("%s %s is %s", tc.gvk.Kind, tc.name, tc.state), func() error {
			obj, err := get(ctx, tc.gvk, "shop", tc.name)
			if err != nil {
				return err
			}
			got, _ := AssessWith(ctx, obj, nil)
			if got.State != tc.state || !strings.HasPrefix(got.Message, tc.message) {
				return fmt.Errorf("got %s", got)
			}
			record(t, tc.file, obj)
			return nil
		})
	}

	// A crash-looping pod is Degraded at every step of its loop, whatever
	// the moment it is looked at: terminated, waiting in back-off, running
	// again (Ready) for a moment.
	seen := map[string]bool{}
	deadline := time.Now().Add(90 * time.Second)
	for len(seen) < 3 || time.Now().Before(deadline.Add(-70*time.Second)) {
		if time.Now().After(deadline) {
			t.Fatalf("crash loop: saw only the container states %v after a restart within 90s", seen)
		}
		obj, err := get(ctx, pod, "shop", "crashloop")
		if err != nil {
			t.Fatal(err)
		}
		step, restarts := crashStep(obj)
		got, _ := AssessWith(ctx, obj, nil)
		if step != "" && (got.State != Degraded || !strings.Contains(got.Message, "container app exited with code 1 (Error)")) {
			t.Fatalf("crash loop, container %s: %s; want Degraded with the exit code", step, got)
		}
		// Recorded from the second round on, with a restart behind it.
		if step != "" && restarts > 0 && !seen[step] {
			seen[step] = true
			t.Logf("crash loop, container %s: %s", step, got)
			record(t, "pod-crashloop-"+step, obj)
		}
		time.Sleep(200 * time.Millisecond)
	}

	// The aggregated API without endpoints is Progressing (it may still be
	// starting), until APIServiceStartDeadline.
	file := filepath.Join(t.TempDir(), "apiservice.yaml")
	if err := os.WriteFile(file, []byte(apiServiceManifest), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, errOut, err := cluster.Kubectl(ctx, cluster.AdminKubeconfig, "apply", "-f", file); err != nil {
		t.Fatalf("kubectl apply: %v\n%s%s", err, out, errOut)
	}
	defer func() {
		if out, errOut, err := cluster.Kubectl(context.Background(), cluster.AdminKubeconfig, "delete", "-f", file); err != nil {
			t.Errorf("kubectl delete: %v\n%s%s", err, out, errOut)
		}
	}()
	apiService := schema.GroupVersionKind{Group: "apiregistration.k8s.io", Version: "v1", Kind: "APIService"}
	wait.Eventually(t, 60*time.Second, "APIService not available yet", func() error {
		obj, err := get(ctx, apiService, "", "v1alpha1.field.example.com")
		if err != nil {
			return err
		}
		got, _ := AssessWith(ctx, obj, nil)
		if got.State != Progressing || !strings.HasPrefix(got.Message, "not available since ") || got.Until.IsZero() {
			return fmt.Errorf("got %s (until %v)", got, got.Until)
		}
		if late, _ := assessAt(ctx, obj, nil, got.Until); late.State != Degraded {
			return fmt.Errorf("at its deadline: %s, want Degraded", late)
		}
		record(t, "apiservice-starting", obj)
		return nil
	})
}

// crashStep names the state of the first container of a crash-looping
// pod (terminated, back-off, running-again; "" before its first crash) and
// returns its restart count.
func crashStep(pod *unstructured.Unstructured) (string, int64) {
	statuses, _, _ := unstructured.NestedSlice(pod.Object, "status", "containerStatuses")
	if len(statuses) == 0 {
		return "", 0
	}
	cs, _ := statuses[0].(map[string]any)
	restarts, _, _ := unstructured.NestedInt64(cs, "restartCount")
	switch {
	case hasPath(cs, "state", "terminated"):
		return "terminated", restarts
	case hasPath(cs, "state", "waiting"):
		return "back-off", restarts
	case hasPath(cs, "state", "running") && restarts > 0:
		return "running-again", restarts
	}
	return "", restarts
}

func hasPath(m map[string]any, path ...string) bool {
	_, ok, _ := unstructured.NestedFieldNoCopy(m, path...)
	return ok
}

// record writes obj, without its managedFields, to testdata/live-name.yaml
// when -record is given, headed by the time it was read.
func record(t *testing.T, name string, obj *unstructured.Unstructured) {
	t.Helper()
	if !*recordFixtures {
		return
	}
	obj = obj.DeepCopy()
	obj.SetManagedFields(nil)
	data, err := yaml.Marshal(obj.Object)
	if err != nil {
		t.Fatal(err)
	}
	header := fmt.Sprintf("%s%s, read from the simulated cluster by TestLiveCluster -record\n", recordedAtPrefix, time.Now().UTC().Format(time.RFC3339))
	path := filepath.Join("testdata", "live-"+name+".yaml")
	if err := os.WriteFile(path, append([]byte(header), data...), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("recorded %s", path)
}

// recordedAtPrefix starts the first line of a recorded fixture.
const recordedAtPrefix = "# recorded at "

package health

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/driftguard/driftguard/devenv"
	"github.com/driftguard/driftguard/test/wait"
)

// liveManifests are applied to a simulated cluster (kube-controller-manager,
// kube-scheduler and a KWOK node: pods become ready, Jobs complete, no
// storage provisioner).
const liveManifests = `apiVersion: v1
kind: Namespace
metadata: {name: shop}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: web-config, namespace: shop}
data: {LOG_LEVEL: info}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: shop}
spec:
  replicas: 3
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers: [{name: web, image: "nginx:1.27", ports: [{containerPort: 80}]}]
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: huge, namespace: shop}
spec:
  replicas: 1
  selector: {matchLabels: {app: huge}}
  template:
    metadata: {labels: {app: huge}}
    spec:
      containers: [{name: huge, image: "nginx:1.27", resources: {requests: {cpu: "100000"}}}]
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: paused, namespace: shop}
spec:
  paused: true
  replicas: 1
  selector: {matchLabels: {app: paused}}
  template:
    metadata: {labels: {app: paused}}
    spec:
      containers: [{name: paused, image: "nginx:1.27"}]
---
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: db, namespace: shop}
spec:
  replicas: 2
  serviceName: db
  selector: {matchLabels: {app: db}}
  template:
    metadata: {labels: {app: db}}
    spec:
      containers: [{name: db, image: "postgres:17"}]
---
apiVersion: apps/v1
kind: DaemonSet
metadata: {name: agent, namespace: shop}
spec:
  selector: {matchLabels: {app: agent}}
  template:
    metadata: {labels: {app: agent}}
    spec:
      containers: [{name: agent, image: "fluent/fluent-bit:3.2"}]
---
apiVersion: batch/v1
kind: Job
metadata: {name: migrate, namespace: shop}
spec:
  template:
    spec:
      restartPolicy: Never
      containers: [{name: migrate, image: "busybox:1.37", command: ["true"]}]
---
apiVersion: batch/v1
kind: Job
metadata: {name: later, namespace: shop}
spec:
  suspend: true
  template:
    spec:
      restartPolicy: Never
      containers: [{name: later, image: "busybox:1.37"}]
---
apiVersion: v1
kind: Service
metadata: {name: web, namespace: shop}
spec:
  selector: {app: web}
  ports: [{port: 80, targetPort: 80}]
---
apiVersion: v1
kind: Service
metadata: {name: nobody, namespace: shop}
spec:
  selector: {app: nobody}
  ports: [{port: 80}]
---
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: data, namespace: shop}
spec:
  accessModes: [ReadWriteOnce]
  resources: {requests: {storage: 1Gi}}
`

// TestLiveCluster assesses objects as a real control plane leaves them,
// reading Service endpoints through ClientLookup.
func TestLiveCluster(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a simulated cluster")
	}
	devenv.RequireBinaries(t, true)
	ctx, cancel := context.WithTimeout(context.Background(), 7*time.Minute)
	defer cancel()
	cluster, err := devenv.Start(ctx, devenv.Options{Simulated: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := cluster.Stop(); err != nil {
			t.Error(err)
		}
	})
	file := filepath.Join(t.TempDir(), "shop.yaml")
	if err := os.WriteFile(file, []byte(liveManifests+"---\n"+fieldManifests), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, errOut, err := cluster.Kubectl(ctx, cluster.AdminKubeconfig, "apply", "-f", file); err != nil {
		t.Fatalf("kubectl apply: %v\n%s%s", err, out, errOut)
	}
	c, err := client.New(cluster.Config, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	lookup := ClientLookup(c)

	assess := func(ctx context.Context, gvk schema.GroupVersionKind, name string) (Result, error) {
		obj := &unstructured.Unstructured{}
		obj.SetGroupVersionKind(gvk)
		ns := "shop"
		if gvk.Kind == "Namespace" {
			ns = ""
		}
		if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, obj); err != nil {
			return Result{}, err
		}
		return AssessWith(ctx, obj, lookup)
	}
	gvk := func(group, kind string) schema.GroupVersionKind {
		return schema.GroupVersionKind{Group: group, Version: "v1", Kind: kind}
	}
	for _, tc := range []struct {
		gvk  schema.GroupVersionKind
		name string
		want Result
	}{
		{gvk("", "Namespace"), "shop", Result{State: Healthy, Message: "active"}},
		{gvk("", "ConfigMap"), "web-config", Result{State: Healthy, Message: "exists"}},
		{gvk("apps", "Deployment"), "web", Result{State: Healthy, Message: "3 of 3 replicas ready"}},
		{gvk("apps", "Deployment"), "paused", Result{State: Suspended, Message: "rollout paused"}},
		{gvk("apps", "StatefulSet"), "db", Result{State: Healthy, Message: "2 of 2 replicas ready"}},
		{gvk("apps", "DaemonSet"), "agent", Result{State: Healthy, Message: "1 of 1 pods ready"}},
		{gvk("batch", "Job"), "migrate", Result{State: Healthy, Message: "completed (1 pod succeeded)"}},
		{gvk("batch", "Job"), "later", Result{State: Suspended, Message: "suspended"}},
		{gvk("", "Service"), "web", Result{State: Healthy, Message: "3 ready endpoints"}},
		{gvk("", "Service"), "nobody", Result{State: Progressing, Message: "no endpoints: no pod matches the selector"}},
		{gvk("", "PersistentVolumeClaim"), "data", Result{State: Progressing, Message: "pending: waiting for a volume"}},
	} {
		wait.Eventually(t, 90*time.Second, fmt.Sprintf("%s %s is %s", tc.gvk.Kind, tc.name, tc.want), func() error {
			got, err := assess(ctx, tc.gvk, tc.name)
			if err != nil {
				return err
			}
			if got != tc.want {
				return fmt.Errorf("got %s", got)
			}
			return nil
		})
	}

	// A Deployment whose pod cannot be scheduled stays Progressing, and its
	// pod says why.
	wait.Eventually(t, 30*time.Second, "pod of Deployment huge not scheduled", func() error {
		pods := &unstructured.UnstructuredList{}
		pods.SetGroupVersionKind(gvk("", "PodList"))
		if err := c.List(ctx, pods, client.InNamespace("shop"), client.MatchingLabels{"app": "huge"}); err != nil {
			return err
		}
		if len(pods.Items) != 1 {
			return fmt.Errorf("%d pods", len(pods.Items))
		}
		if got := Assess(&pods.Items[0]); got.State != Progressing || !strings.HasPrefix(got.Message, "not scheduled: Unschedulable: ") {
			return fmt.Errorf("got %s", got)
		}
		return nil
	})
	if got, err := assess(ctx, gvk("apps", "Deployment"), "huge"); err != nil || got != (Result{State: Progressing, Message: "0 of 1 updated replicas available"}) {
		t.Errorf("Deployment huge: %s, %v", got, err)
	}

	checkField(t, ctx, cluster, c)
}

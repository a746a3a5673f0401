package watchrevert

import (
	"context"
	"fmt"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/driftguard/driftguard/audit"
	"github.com/driftguard/driftguard/test/wait"
)

const mountsManifests = `apiVersion: v1
kind: Namespace
metadata:
  name: mounts
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: mounts}
spec:
  replicas: 0
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers:
      - name: web
        image: nginx:1.27
        ports: [{containerPort: 80}]
        volumeMounts:
        - {name: config, mountPath: /etc/app/a.conf, subPath: a.conf}
        - {name: config, mountPath: /etc/app/b.conf, subPath: b.conf}
      volumes: [{name: config, configMap: {name: cfg}}]
`

// TestRepeatedVolumeMountIsReverted: a Deployment that mounts one volume
// twice (volumeMounts keyed by mountPath, one name) is in sync as applied,
// and a change to its first mount is drift that self-heal reverts.
func TestRepeatedVolumeMountIsReverted(t *testing.T) {
	t.Parallel()
	repo := h.NewGuard(t, "mounts", true, map[string]string{"all.yaml": mountsManifests})
	h.WaitApplied(t, repo.Guard, repo.Initial)
	drifted := func(r audit.Record) bool {
		return r.Type == audit.Drift && r.Guard == repo.Guard && r.Object.Name == "web"
	}
	// The guard has compared the applied object (its own apply's event).
	h.WaitReconciles(t, "mounts", 2)
	if got := h.Audit.Find(drifted); len(got) != 0 {
		t.Fatalf("the Deployment as applied drifted: %+v", got[0].Fields)
	}
	if out, err := h.Kubectl(t, "patch", "deployment", "web", "-n", "mounts", "--type=json", "-p",
		`[{"op":"replace","path":"/spec/template/spec/containers/0/volumeMounts/0/subPath","value":"evil.conf"}]`); err != nil {
		t.Fatalf("patch the first mount: %v %s", err, out)
	}
	rec := h.Audit.Wait(t, 10*time.Second, "drift of web", drifted)
	if len(rec.Fields) != 1 || rec.Fields[0].Path != "/spec/template/spec/containers/0/volumeMounts/0/subPath" || rec.Fields[0].Live != "evil.conf" {
		t.Fatalf("drift record: %+v", rec.Fields)
	}
	wait.Eventually(t, 10*time.Second, "the first mount reverted", func() error {
		var d appsv1.Deployment
		if err := h.Admin.Get(context.Background(), client.ObjectKey{Namespace: "mounts", Name: "web"}, &d); err != nil {
			return err
		}
		m := d.Spec.Template.Spec.Containers[0].VolumeMounts
		if len(m) != 2 || m[0].SubPath != "a.conf" || m[1].SubPath != "b.conf" {
			return fmt.Errorf("volumeMounts %+v", m)
		}
		return nil
	})
}

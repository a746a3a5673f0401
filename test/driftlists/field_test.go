package driftlists

import (
	"fmt"
	"reflect"
	"testing"

	"github.com/driftguard/driftguard/render"
)

// fieldObjects are objects as public charts and kustomizations render
// them (written for driftguard), with what the API server adds to them on
// the way (defaults, generated labels, allocated IPs), and the edits people
// make with kubectl.
var fieldObjects = []struct {
	name, manifest string
	edits          []fieldEdit
}{
	{name: "podinfo Deployment", manifest: `
apiVersion: apps/v1
kind: Deployment
metadata:
  name: podinfo
  namespace: field
  labels: {app.kubernetes.io/name: podinfo, helm.sh/chart: podinfo-6.7.1}
spec:
  replicas: 2
  strategy: {type: RollingUpdate, rollingUpdate: {maxUnavailable: 1}}
  selector: {matchLabels: {app.kubernetes.io/name: podinfo}}
  template:
    metadata:
      labels: {app.kubernetes.io/name: podinfo}
      annotations: {prometheus.io/scrape: "true", prometheus.io/port: "9898"}
    spec:
      terminationGracePeriodSeconds: 30
      containers:
      - name: podinfo
        image: ghcr.io/stefanprodan/podinfo:6.7.1
        command: [./podinfo, --port=9898, --level=info]
        ports:
        - {name: http, containerPort: 9898, protocol: TCP}
        - {name: grpc, containerPort: 9999, protocol: TCP}
        env:
        - {name: PODINFO_UI_COLOR, value: "#34577c"}
        livenessProbe:
          exec: {command: [podcli, check, http, localhost:9898/healthz]}
          initialDelaySeconds: 1
          timeoutSeconds: 5
        readinessProbe:
          httpGet: {path: /readyz, port: http}
        resources:
          limits: {memory: 256Mi}
          requests: {cpu: 1m, memory: 16Mi}
        volumeMounts:
        - {name: data, mountPath: /data}
      volumes:
      - {name: data, emptyDir: {}}
`, edits: []fieldEdit{
		{"kubectl scale --replicas=5", func(m map[string]any) { spec(m)["replicas"] = int64(5) }, []string{"/spec/replicas"}},
		{"kubectl set image", func(m map[string]any) { container(m)["image"] = "ghcr.io/stefanprodan/podinfo:6.7.2" },
			[]string{"/spec/template/spec/containers/0/image"}},
		{"kubectl rollout restart", func(m map[string]any) {
			templateMeta(m)["annotations"].(map[string]any)["kubectl.kubernetes.io/restartedAt"] = "2026-12-04T01:30:00Z"
		}, nil},
		{"kubectl set env", func(m map[string]any) {
			container(m)["env"] = append(container(m)["env"].([]any), map[string]any{"name": "DEBUG", "value": "1"})
		}, nil},
		{"a probe port renamed", func(m map[string]any) {
			container(m)["readinessProbe"].(map[string]any)["httpGet"].(map[string]any)["port"] = int64(9898)
		}, []string{"/spec/template/spec/containers/0/readinessProbe/httpGet/port"}},
	}},
	{name: "PostgreSQL StatefulSet", manifest: `
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: postgresql, namespace: field, labels: {app.kubernetes.io/name: postgresql}}
spec:
  serviceName: postgresql-hl
  replicas: 1
  selector: {matchLabels: {app.kubernetes.io/name: postgresql}}
  template:
    metadata: {labels: {app.kubernetes.io/name: postgresql}}
    spec:
      securityContext: {fsGroup: 1001}
      containers:
      - name: postgresql
        image: docker.io/library/postgres:17.2
        ports: [{name: tcp-postgresql, containerPort: 5432}]
        volumeMounts:
        - {name: data, mountPath: /var/lib/postgresql/data}
        - {name: config, mountPath: /etc/postgresql/postgresql.conf, subPath: postgresql.conf}
        - {name: config, mountPath: /etc/postgresql/pg_hba.conf, subPath: pg_hba.conf}
      volumes:
      - {name: config, configMap: {name: postgresql-config}}
  volumeClaimTemplates:
  - metadata: {name: data}
    spec:
      accessModes: [ReadWriteOnce]
      resources: {requests: {storage: 8Gi}}
`, edits: []fieldEdit{
		{"the second subPath mount changed", func(m map[string]any) {
			container(m)["volumeMounts"].([]any)[2].(map[string]any)["subPath"] = "evil.conf"
		}, []string{"/spec/template/spec/containers/0/volumeMounts/2/subPath"}},
	}},
	{name: "node exporter DaemonSet", manifest: `
apiVersion: apps/v1
kind: DaemonSet
metadata: {name: node-exporter, namespace: field}
spec:
  selector: {matchLabels: {app.kubernetes.io/name: node-exporter}}
  updateStrategy: {type: RollingUpdate, rollingUpdate: {maxUnavailable: 1}}
  template:
    metadata: {labels: {app.kubernetes.io/name: node-exporter}}
    spec:
      hostNetwork: true
      hostPID: true
      tolerations: [{effect: NoSchedule, operator: Exists}]
      containers:
      - name: node-exporter
        image: quay.io/prometheus/node-exporter:v1.8.2
        args: [--path.rootfs=/host/root, "--web.listen-address=[$(HOST_IP)]:9100"]
        env: [{name: HOST_IP, value: 0.0.0.0}]
        ports: [{name: metrics, containerPort: 9100, hostPort: 9100}]
        volumeMounts: [{name: root, mountPath: /host/root, readOnly: true, mountPropagation: HostToContainer}]
      volumes: [{name: root, hostPath: {path: /}}]
`, edits: []fieldEdit{
		// tolerations is an atomic list: compared, and drifted, whole.
		{"a toleration added", func(m map[string]any) {
			podSpec(m)["tolerations"] = append(podSpec(m)["tolerations"].([]any), map[string]any{"operator": "Exists"})
		}, []string{"/spec/template/spec/tolerations"}},
	}},
	{name: "Service", manifest: `
apiVersion: v1
kind: Service
metadata: {name: podinfo, namespace: field}
spec:
  selector: {app.kubernetes.io/name: podinfo}
  ports:
  - {name: http, port: 9898, targetPort: http}
  - {name: grpc, port: 9999, targetPort: grpc}
`, edits: []fieldEdit{
		{"a port's target changed", func(m map[string]any) {
			spec(m)["ports"].([]any)[1].(map[string]any)["targetPort"] = int64(9000)
		}, []string{"/spec/ports/1/targetPort"}},
	}},
	{name: "Ingress", manifest: `
apiVersion: networking.k8s.io/v1
kind: Ingress
metadata: {name: podinfo, namespace: field, annotations: {cert-manager.io/cluster-issuer: letsencrypt}}
spec:
  ingressClassName: nginx
  tls: [{hosts: [podinfo.example.com], secretName: podinfo-tls}]
  rules:
  - host: podinfo.example.com
    http:
      paths:
      - {path: /, pathType: ImplementationSpecific, backend: {service: {name: podinfo, port: {number: 9898}}}}
`, edits: []fieldEdit{
		{"the host changed", func(m map[string]any) {
			spec(m)["rules"].([]any)[0].(map[string]any)["host"] = "evil.example.com"
		}, []string{"/spec/rules/0/host"}},
	}},
	{name: "HorizontalPodAutoscaler", manifest: `
apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata: {name: podinfo, namespace: field}
spec:
  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: podinfo}
  minReplicas: 2
  maxReplicas: 4
  metrics:
  - type: Resource
    resource: {name: cpu, target: {type: Utilization, averageUtilization: 80}}
  - type: Resource
    resource: {name: memory, target: {type: AverageValue, averageValue: 200Mi}}
`, edits: []fieldEdit{
		{"maxReplicas raised", func(m map[string]any) { spec(m)["maxReplicas"] = int64(10) }, []string{"/spec/maxReplicas"}},
	}},
	{name: "migration Job", manifest: `
apiVersion: batch/v1
kind: Job
metadata: {name: migrate, namespace: field}
spec:
  backoffLimit: 2
  template:
    metadata: {labels: {app.kubernetes.io/component: migrate}}
    spec:
      restartPolicy: Never
      containers: [{name: migrate, image: "ghcr.io/example/shop:2.4.1", args: [migrate, up]}]
`},
	{name: "PersistentVolumeClaim", manifest: `
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: uploads, namespace: field}
spec:
  accessModes: [ReadWriteOnce]
  resources: {requests: {storage: 1Gi}}
`},
}

type fieldEdit struct {
	what string
	edit func(map[string]any)
	want []string
}

func spec(m map[string]any) map[string]any { return m["spec"].(map[string]any) }

func templateMeta(m map[string]any) map[string]any {
	return spec(m)["template"].(map[string]any)["metadata"].(map[string]any)
}

func podSpec(m map[string]any) map[string]any {
	return spec(m)["template"].(map[string]any)["spec"].(map[string]any)
}

func container(m map[string]any) map[string]any {
	return podSpec(m)["containers"].([]any)[0].(map[string]any)
}

// TestFieldObjects: objects as charts render them are in sync once applied
// (whatever the API server defaulted, generated or allocated), and each
// edit people make with kubectl shows as the drift it is: a change to a
// field Git sets is drift at that field; a field Git does not set, added by
// someone else (a restart annotation, an environment variable), is not.
func TestFieldObjects(t *testing.T) {
	namespace(t, "field")
	a := applier()
	for i, tc := range fieldObjects {
		t.Run(tc.name, func(t *testing.T) {
			for j, e := range append([]fieldEdit{{what: "as applied"}}, tc.edits...) {
				// A fresh object per edit: another name, same content.
				u := object(t, tc.manifest).Obj().DeepCopy()
				u.SetName(fmt.Sprintf("%s-%d-%d", u.GetName(), i, j))
				o := render.NewObject(u, render.Source{Path: t.Name() + ".yaml", Line: 1})
				applyAll(t, a, o)
				if got := driftOf(t, a, o); got != nil {
					t.Fatalf("as applied: drift %v", got)
				}
				if e.edit == nil {
					continue
				}
				update(t, get(t, o), e.edit)
				if got := driftOf(t, a, o); !reflect.DeepEqual(got, e.want) {
					t.Errorf("%s: drift %v, want %v", e.what, got, e.want)
				}
			}
		})
	}
}

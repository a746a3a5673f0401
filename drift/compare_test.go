package drift

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

func obj(t testing.TB, y string) map[string]any {
	t.Helper()
	var m map[string]any
	if err := yaml.Unmarshal([]byte(y), &m); err != nil {
		t.Fatalf("fixture: %v", err)
	}
	// Round-trip through JSON the way unstructured objects are decoded.
	b, _ := json.Marshal(m)
	m = nil
	dec := json.NewDecoder(strings.NewReader(string(b)))
	dec.UseNumber()
	if err := dec.Decode(&m); err != nil {
		t.Fatal(err)
	}
	return JSONNumbers(m).(map[string]any)
}

const deployment = `
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  namespace: shop
  labels: {app: web}
spec:
  replicas: 3
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers:
      - name: web
        image: nginx:1.27
        ports: [{containerPort: 80}]
        resources: {requests: {cpu: 100m, memory: 64Mi}, limits: {cpu: 1}}
`

const liveDeployment = `
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  namespace: shop
  uid: 1234
  resourceVersion: "99"
  generation: 4
  creationTimestamp: "2026-01-01T00:00:00Z"
  labels: {app: web}
  annotations:
    deployment.kubernetes.io/revision: "1"
    driftguard.io/changed-by: alice
  managedFields: [{manager: driftguard, operation: Apply}]
spec:
  replicas: 3
  revisionHistoryLimit: 10
  progressDeadlineSeconds: 600
  selector: {matchLabels: {app: web}}
  strategy: {type: RollingUpdate}
  template:
    metadata: {labels: {app: web}}
    spec:
      restartPolicy: Always
      containers:
      - name: web
        image: nginx:1.27
        imagePullPolicy: IfNotPresent
        terminationMessagePath: /dev/termination-log
        ports: [{containerPort: 80, protocol: TCP}]
        resources: {requests: {cpu: 100m, memory: 64Mi}, limits: {cpu: 1000m}}
      - name: sidecar
        image: envoy
status: {replicas: 3}
`

func TestCompare(t *testing.T) {
	base := obj(t, deployment)
	tests := []struct {
		name    string
		desired string
		live    string
		edit    func(live map[string]any)
		want    []string
	}{
		{name: "defaults, server fields, status and extra list elements are not drift", desired: deployment, live: liveDeployment},
		{name: "identical", desired: deployment, live: deployment},
		{name: "scaled", desired: deployment, live: liveDeployment, edit: func(l map[string]any) {
			l["spec"].(map[string]any)["replicas"] = int64(5)
		}, want: []string{"/spec/replicas"}},
		{name: "image changed in a named list element", desired: deployment, live: liveDeployment, edit: func(l map[string]any) {
			c := l["spec"].(map[string]any)["template"].(map[string]any)["spec"].(map[string]any)["containers"].([]any)[0].(map[string]any)
			c["image"] = "nginx:evil"
		}, want: []string{"/spec/template/spec/containers/0/image"}},
		{name: "container removed", desired: deployment, live: liveDeployment, edit: func(l map[string]any) {
			s := l["spec"].(map[string]any)["template"].(map[string]any)["spec"].(map[string]any)
			s["containers"] = s["containers"].([]any)[1:]
		}, want: []string{"/spec/template/spec/containers/0"}},
		{name: "label removed", desired: deployment, live: liveDeployment, edit: func(l map[string]any) {
			delete(l["metadata"].(map[string]any)["labels"].(map[string]any), "app")
		}, want: []string{"/metadata/labels/app"}},
		{name: "float and int are one number", desired: `{"kind":"X","spec":{"n":3}}`, live: `{"kind":"X","spec":{"n":3.0}}`},
		{name: "quantity number vs string", desired: `{"kind":"X","spec":{"cpu":1}}`, live: `{"kind":"X","spec":{"cpu":"1"}}`},
		{name: "quantity different", desired: `{"kind":"X","spec":{"cpu":"1"}}`, live: `{"kind":"X","spec":{"cpu":"2"}}`, want: []string{"/spec/cpu"}},
		{name: "strings that are not quantities", desired: `{"kind":"X","spec":{"a":"x1"}}`, live: `{"kind":"X","spec":{"a":"x2"}}`, want: []string{"/spec/a"}},
		{name: "atomic list length", desired: `{"kind":"X","spec":{"args":["a","b"]}}`, live: `{"kind":"X","spec":{"args":["a","b","c"]}}`, want: []string{"/spec/args"}},
		{name: "atomic list element", desired: `{"kind":"X","spec":{"args":["a","b"]}}`, live: `{"kind":"X","spec":{"args":["a","c"]}}`, want: []string{"/spec/args/1"}},
		{name: "type changed", desired: `{"kind":"X","spec":{"a":{"b":1}}}`, live: `{"kind":"X","spec":{"a":"b"}}`, want: []string{"/spec/a"}},
		// Git sets a field the cluster lacks: drift, unless the server values
		// of an apply say the server itself drops it (TestServerValuesDropEmpty).
		{name: "empty map and list in git, missing live", desired: `{"kind":"X","metadata":{"annotations":{}},"spec":{"a":[],"b":{}}}`, live: `{"kind":"X","metadata":{},"spec":{}}`, want: []string{"/spec/a", "/spec/b"}},
		{name: "zero values missing live", desired: `{"kind":"X","spec":{"env":[{"name":"A","value":""}],"hostNetwork":false,"n":0}}`, live: `{"kind":"X","spec":{"env":[{"name":"A"}]}}`, want: []string{"/spec/env/0/value", "/spec/hostNetwork", "/spec/n"}},
		{name: "live null is absent", desired: `{"kind":"X","spec":{"a":[],"s":""}}`, live: `{"kind":"X","spec":{"a":null,"s":null}}`, want: []string{"/spec/a", "/spec/s"}},
		{name: "zero value against a set value is drift", desired: `{"kind":"X","spec":{"hostNetwork":false}}`, live: `{"kind":"X","spec":{"hostNetwork":true}}`, want: []string{"/spec/hostNetwork"}},
		{name: "null in git is no opinion", desired: `{"kind":"X","spec":{"a":null}}`, live: `{"kind":"X","spec":{"a":1}}`},
		{name: "pointer escaping", desired: `{"kind":"X","metadata":{"labels":{"a/b~c":"1"}}}`, live: `{"kind":"X","metadata":{"labels":{}}}`, want: []string{"/metadata/labels/a~1b~0c"}},
		{name: "own annotations and last-applied are ignored", desired: `{"kind":"X","metadata":{"annotations":{"driftguard.io/x":"1","kubectl.kubernetes.io/last-applied-configuration":"{}"}}}`, live: `{"kind":"X","metadata":{}}`},
		{name: "other annotation is drift", desired: `{"kind":"X","metadata":{"annotations":{"team":"a"}}}`, live: `{"kind":"X","metadata":{"annotations":{"team":"b"}}}`, want: []string{"/metadata/annotations/team"}},
		{name: "apiVersion differences are conversions", desired: `{"apiVersion":"v2","kind":"X"}`, live: `{"apiVersion":"v1","kind":"X"}`},
	}
	_ = base
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d, l := obj(t, tt.desired), obj(t, tt.live)
			if tt.edit != nil {
				tt.edit(l)
			}
			got := Paths(Compare(d, l, Options{}))
			if len(got) == 0 {
				got = nil
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("Compare paths = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestCompareIgnore(t *testing.T) {
	d, l := obj(t, deployment), obj(t, liveDeployment)
	l["spec"].(map[string]any)["replicas"] = int64(7)
	ignore := func(tokens []string) bool { return pointer(tokens) == "/spec/replicas" }
	if got := Compare(d, l, Options{Ignore: ignore}); len(got) != 0 {
		t.Fatalf("ignored field reported: %v", got)
	}
}

func TestSecretRedaction(t *testing.T) {
	d := obj(t, `{"apiVersion":"v1","kind":"Secret","metadata":{"name":"s"},"stringData":{"password":"hunter2"},"data":{"user":"YWRtaW4="}}`)
	inSync := obj(t, `{"apiVersion":"v1","kind":"Secret","metadata":{"name":"s"},"data":{"user":"YWRtaW4=","password":"aHVudGVyMg=="}}`)
	if got := Compare(d, inSync, Options{}); len(got) != 0 {
		t.Fatalf("stringData should compare with data: %v", got)
	}
	changed := obj(t, `{"apiVersion":"v1","kind":"Secret","metadata":{"name":"s"},"data":{"user":"YWRtaW4=","password":"b3RoZXI="}}`)
	got := Compare(d, changed, Options{})
	if len(got) != 1 || got[0].Path != "/data/password" {
		t.Fatalf("want one change at /data/password, got %v", got)
	}
	b, _ := json.Marshal(got)
	for _, secret := range []string{"aHVudGVyMg==", "b3RoZXI=", "hunter2"} {
		if strings.Contains(string(b), secret) {
			t.Fatalf("secret value %q leaked in %s", secret, b)
		}
	}
	if !strings.HasPrefix(got[0].Desired.(string), "sha256:") {
		t.Fatalf("desired not redacted: %v", got[0].Desired)
	}
	red := RedactObject(changed)
	b, _ = json.Marshal(red)
	if strings.Contains(string(b), "b3RoZXI=") {
		t.Fatalf("RedactObject leaked: %s", b)
	}
	if changed["data"].(map[string]any)["password"] != "b3RoZXI=" {
		t.Fatal("RedactObject modified its input")
	}
}

func FuzzCompare(f *testing.F) {
	f.Add(deployment)
	f.Add(liveDeployment)
	f.Add(`{"apiVersion":"v1","kind":"Secret","stringData":{"a":"b"},"data":{"c":1}}`)
	f.Add(`{"a":[1,{"name":"x"},null,[[]]],"metadata":{"annotations":"x","labels":[1]}}`)
	f.Fuzz(func(t *testing.T, s string) {
		var m map[string]any
		if err := yaml.Unmarshal([]byte(s), &m); err != nil || m == nil {
			return
		}
		if got := Compare(m, m, Options{}); len(got) != 0 {
			t.Fatalf("Compare(x, x) found drift: %v", got)
		}
		Compare(m, map[string]any{}, Options{})
		Compare(map[string]any{"metadata": m}, m, Options{})
		RedactObject(m)
	})
}

func BenchmarkCompareDeployment(b *testing.B) {
	d, l := obj(b, deployment), obj(b, liveDeployment)
	b.ReportAllocs()
	for b.Loop() {
		if len(Compare(d, l, Options{})) != 0 {
			b.Fatal("unexpected drift")
		}
	}
}

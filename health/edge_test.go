package health

import (
	"context"
	"errors"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/yaml"
)

func parse(t *testing.T, src string) *unstructured.Unstructured {
	t.Helper()
	j, err := yaml.YAMLToJSON([]byte(src))
	if err != nil {
		t.Fatal(err)
	}
	u := &unstructured.Unstructured{}
	if err := u.UnmarshalJSON(j); err != nil {
		t.Fatal(err)
	}
	return u
}

// Objects of the wrong shape give Unknown and an error naming the field,
// never a panic or a guess.
func TestAssessBadFields(t *testing.T) {
	for _, tc := range []struct {
		name, src, wantMsg string
	}{
		{"conditions not a list", `
apiVersion: example.com/v1
kind: Widget
metadata: {name: w, namespace: ns}
status: {conditions: {type: Ready}}`, "bad field: status.conditions is an object, want an array"},
		{"condition not an object", `
apiVersion: example.com/v1
kind: Widget
metadata: {name: w, namespace: ns}
status: {conditions: [Ready]}`, "bad field: status.conditions[0] is a string, want an object"},
		{"condition status a boolean", `
apiVersion: example.com/v1
kind: Widget
metadata: {name: w, namespace: ns}
status: {conditions: [{type: Ready, status: true}]}`, "bad field: status.conditions[0].status is a boolean, want a string"},
		{"status a string", `
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: ns, generation: 1}
status: "ok"`, "bad field: status is a string, want an object"},
		{"paused a string", `
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: ns}
spec: {paused: "yes"}`, "bad field: spec.paused is a string, want a boolean"},
		{"container status name a number", `
apiVersion: v1
kind: Pod
metadata: {name: p, namespace: ns}
status:
  phase: Running
  containerStatuses: [{name: 7, state: {waiting: {reason: CrashLoopBackOff}}}]`, "bad field: status.containerStatuses[0].name is a number, want a string"},
		{"deletionTimestamp a number", `
apiVersion: v1
kind: ConfigMap
metadata: {name: c, namespace: ns, deletionTimestamp: 5}`, "bad field: metadata.deletionTimestamp is a number, want a string"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			obj := parse(t, tc.src)
			got, err := AssessWith(context.Background(), obj, nil)
			if got.State != Unknown || got.Message != tc.wantMsg {
				t.Errorf("AssessWith = %+v, want Unknown %q", got, tc.wantMsg)
			}
			if err == nil || !strings.Contains(err.Error(), tc.wantMsg[len("bad field: "):]) || !strings.Contains(err.Error(), obj.GetName()) {
				t.Errorf("error = %v, want one naming the object and the field", err)
			}
		})
	}
}

func TestServiceEndpointEdgeCases(t *testing.T) {
	svc := `
apiVersion: v1
kind: Service
metadata: {name: web, namespace: shop}
spec: {selector: {app: web}, ports: [{port: 80}]}`
	slice := func(endpoints string) string {
		return `
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
addressType: IPv4
metadata: {name: web-abc, namespace: shop, labels: {kubernetes.io/service-name: web}}
endpoints: ` + endpoints
	}
	for _, tc := range []struct {
		name      string
		related   []string
		want      Result
		wantError bool
	}{
		{"ready not set means ready", []string{slice(`[{addresses: [10.0.0.9]}]`)}, Result{State: Healthy, Message: "1 ready endpoint"}, false},
		{"two slices add up", []string{slice(`[{addresses: [10.0.0.9], conditions: {ready: true}}]`), slice(`[{addresses: [10.0.0.8], conditions: {ready: true}}, {addresses: [10.0.0.7], conditions: {ready: false}}]`)}, Result{State: Healthy, Message: "2 ready endpoints"}, false},
		{"slice in another namespace", []string{strings.Replace(slice(`[{addresses: [10.0.0.9]}]`), "namespace: shop", "namespace: other", 1)}, Result{State: Progressing, Message: "no EndpointSlice labelled kubernetes.io/service-name=web"}, false},
		{"no slice at all", nil, Result{State: Progressing, Message: "no EndpointSlice labelled kubernetes.io/service-name=web"}, false},
		{"a slice without endpoints", []string{slice(`[]`)}, Result{State: Progressing, Message: "no endpoints: no pod matches the selector"}, false},
		{"ready of the wrong type", []string{slice(`[{addresses: [10.0.0.9], conditions: {ready: "yes"}}]`)}, Result{State: Unknown, Message: "read EndpointSlice shop/web-abc: endpoints[0].conditions.ready is a string, want a boolean"}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var related Objects
			for _, s := range tc.related {
				related = append(related, parse(t, s))
			}
			got, err := AssessWith(context.Background(), parse(t, svc), related)
			if got != tc.want {
				t.Errorf("AssessWith = %+v, want %+v", got, tc.want)
			}
			if (err != nil) != tc.wantError {
				t.Errorf("error = %v, want error: %v", err, tc.wantError)
			}
		})
	}
}

type failingLookup struct{ err error }

func (l failingLookup) List(context.Context, schema.GroupVersionKind, string, labels.Selector) ([]*unstructured.Unstructured, error) {
	return nil, l.err
}

func TestLookupFailure(t *testing.T) {
	svc := readFixture(t, "service-clusterip-endpoints.yaml")[0]
	boom := errors.New("connection refused")
	got, err := AssessWith(context.Background(), svc, failingLookup{boom})
	if got.State != Unknown || got.Message != "look up endpoints: connection refused" {
		t.Errorf("AssessWith = %+v", got)
	}
	if !errors.Is(err, boom) || !strings.Contains(err.Error(), "Service shop/web") {
		t.Errorf("error = %v, want it to wrap the lookup's and name the Service", err)
	}
}

func TestObjectsList(t *testing.T) {
	objs := Objects(append(readFixture(t, "service-clusterip-endpoints.yaml"), readFixture(t, "deployment-healthy.yaml")[0], nil))
	ctx := context.Background()
	byService := labels.SelectorFromSet(labels.Set{"kubernetes.io/service-name": "web"})
	for _, tc := range []struct {
		name      string
		gvk       schema.GroupVersionKind
		namespace string
		selector  labels.Selector
		want      int
	}{
		{"slices of the service", EndpointSliceGVK, "shop", byService, 1},
		{"any version of the kind", schema.GroupVersionKind{Group: "discovery.k8s.io", Version: "v1beta1", Kind: "EndpointSlice"}, "shop", byService, 1},
		{"nil selector matches all", EndpointSliceGVK, "shop", nil, 1},
		{"other namespace", EndpointSliceGVK, "default", byService, 0},
		{"other service", EndpointSliceGVK, "shop", labels.SelectorFromSet(labels.Set{"kubernetes.io/service-name": "api"}), 0},
		{"other group", schema.GroupVersionKind{Group: "example.com", Version: "v1", Kind: "EndpointSlice"}, "shop", nil, 0},
		{"deployments", schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"}, "shop", labels.Everything(), 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := objs.List(ctx, tc.gvk, tc.namespace, tc.selector)
			if err != nil || len(got) != tc.want {
				t.Errorf("List = %d objects, %v; want %d", len(got), err, tc.want)
			}
		})
	}
}

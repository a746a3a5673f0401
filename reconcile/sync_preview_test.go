package reconcile

import (
	"slices"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/driftguard/driftguard/drift"
)

func TestRemovals(t *testing.T) {
	const desired = `apiVersion: v1
kind: ConfigMap
metadata: {name: cm, namespace: ns, labels: {driftguard.io/guard: g}}
data: {keep: "1"}`
	const job = `apiVersion: batch/v1
kind: Job
metadata: {name: j, namespace: ns, labels: {driftguard.io/guard: g, batch.kubernetes.io/job-name: j, job-name: j}}
spec: {template: {spec: {containers: [{name: m, image: busybox}]}}}`
	for _, tc := range []struct {
		name, desired, live string
		want                []string
	}{
		{name: "a field the guard alone owns and Git dropped", desired: desired, live: `apiVersion: v1
kind: ConfigMap
metadata:
  name: cm
  namespace: ns
  labels: {driftguard.io/guard: g}
  managedFields:
  - {manager: driftguard, operation: Apply, apiVersion: v1, fieldsType: FieldsV1, fieldsV1: {"f:data": {"f:keep": {}, "f:gone": {}}, "f:metadata": {"f:labels": {"f:driftguard.io/guard": {}}}}}
data: {keep: "1", gone: "2"}`, want: []string{"/data/gone"}},
		{name: "co-owned by another manager: the server keeps it", desired: desired, live: `apiVersion: v1
kind: ConfigMap
metadata:
  name: cm
  namespace: ns
  labels: {driftguard.io/guard: g}
  managedFields:
  - {manager: driftguard, operation: Apply, apiVersion: v1, fieldsType: FieldsV1, fieldsV1: {"f:data": {"f:keep": {}, "f:gone": {}}}}
  - {manager: kubectl-edit, operation: Update, apiVersion: v1, fieldsType: FieldsV1, fieldsV1: {"f:data": {"f:gone": {}}}}
data: {keep: "1", gone: "2"}`},
		{name: "another manager's addition is not the guard's to remove", desired: desired, live: `apiVersion: v1
kind: ConfigMap
metadata:
  name: cm
  namespace: ns
  managedFields:
  - {manager: driftguard, operation: Apply, apiVersion: v1, fieldsType: FieldsV1, fieldsV1: {"f:data": {"f:keep": {}}}}
  - {manager: kubectl-edit, operation: Update, apiVersion: v1, fieldsType: FieldsV1, fieldsV1: {"f:data": {"f:extra": {}}}}
data: {keep: "1", extra: "2"}`},
		{name: "a Job's controller-uid labels are applied every time", desired: job, live: `apiVersion: batch/v1
kind: Job
metadata:
  name: j
  namespace: ns
  uid: u-1
  labels: {driftguard.io/guard: g, batch.kubernetes.io/job-name: j, job-name: j, batch.kubernetes.io/controller-uid: u-1, controller-uid: u-1}
  managedFields:
  - {manager: driftguard, operation: Apply, apiVersion: batch/v1, fieldsType: FieldsV1, fieldsV1: {"f:metadata": {"f:labels": {"f:driftguard.io/guard": {}, "f:batch.kubernetes.io/job-name": {}, "f:job-name": {}, "f:batch.kubernetes.io/controller-uid": {}, "f:controller-uid": {}}}}}
spec: {template: {spec: {containers: [{name: m, image: busybox}]}}}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var d, l unstructured.Unstructured
			if err := yaml.Unmarshal([]byte(tc.desired), &d.Object); err != nil {
				t.Fatal(err)
			}
			if err := yaml.Unmarshal([]byte(tc.live), &l.Object); err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, c := range Removals(&d, &l, drift.Options{}) {
				got = append(got, c.Path)
			}
			if !slices.Equal(got, tc.want) {
				t.Fatalf("removals %q, want %q", got, tc.want)
			}
		})
	}
}

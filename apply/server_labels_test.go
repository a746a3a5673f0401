package apply

import (
	"maps"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"
)

func TestServerDefaultedLabels(t *testing.T) {
	for _, tc := range []struct {
		name, manifest string
		want           map[string]any
		uid            bool // needsControllerUID once decorated
	}{
		{name: "Job without template labels", manifest: `apiVersion: batch/v1
kind: Job
metadata: {name: migrate}
spec: {template: {spec: {containers: [{name: m, image: busybox}]}}}`,
			want: map[string]any{JobNameLabel: "migrate", LegacyJobNameLabel: "migrate"}, uid: true},
		{name: "Job with template labels", manifest: `apiVersion: batch/v1
kind: Job
metadata: {name: migrate}
spec: {template: {metadata: {labels: {app: db}}, spec: {containers: [{name: m, image: busybox}]}}}`,
			want: map[string]any{"app": "db", JobNameLabel: "migrate", LegacyJobNameLabel: "migrate"}, uid: true},
		{name: "Job whose template names its job itself", manifest: `apiVersion: batch/v1
kind: Job
metadata: {name: migrate}
spec: {template: {metadata: {labels: {job-name: other}}, spec: {containers: [{name: m, image: busybox}]}}}`,
			want: map[string]any{LegacyJobNameLabel: "other", JobNameLabel: "migrate"}, uid: true},
		{name: "Job with a manual selector", manifest: `apiVersion: batch/v1
kind: Job
metadata: {name: migrate}
spec: {manualSelector: true, selector: {matchLabels: {app: db}}, template: {metadata: {labels: {app: db}}, spec: {containers: [{name: m, image: busybox}]}}}`,
			want: map[string]any{"app": "db"}},
		{name: "Job with a manual selector and no template labels", manifest: `apiVersion: batch/v1
kind: Job
metadata: {name: migrate}
spec: {manualSelector: true, template: {spec: {containers: [{name: m, image: busybox}]}}}`,
			want: map[string]any{}},
		{name: "Job named by generateName", manifest: `apiVersion: batch/v1
kind: Job
metadata: {generateName: migrate-}
spec: {template: {metadata: {labels: {app: db}}, spec: {containers: [{name: m, image: busybox}]}}}`,
			want: map[string]any{"app": "db"}},
		{name: "ReplicationController", manifest: `apiVersion: v1
kind: ReplicationController
metadata: {name: web}
spec: {template: {metadata: {labels: {app: web}}, spec: {containers: [{name: m, image: nginx}]}}}`,
			want: map[string]any{"app": "web"}},
		{name: "Deployment: no defaulting from labels", manifest: `apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec: {selector: {matchLabels: {app: web}}, template: {metadata: {labels: {app: web}}, spec: {containers: [{name: m, image: nginx}]}}}`,
			want: map[string]any{}},
		{name: "a CRD's Job kind is not batch's", manifest: `apiVersion: example.com/v1
kind: Job
metadata: {name: j}
spec: {template: {metadata: {labels: {app: web}}}}`,
			want: map[string]any{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			u := &unstructured.Unstructured{}
			if err := yaml.Unmarshal([]byte(tc.manifest), &u.Object); err != nil {
				t.Fatal(err)
			}
			got := map[string]any{}
			added := ServerDefaultedLabels(u, got)
			if !maps.Equal(got, tc.want) || added != (len(tc.want) > 0) {
				t.Fatalf("labels %v (added %v), want %v", got, added, tc.want)
			}
			got[GuardLabel] = "g"
			md := u.Object["metadata"].(map[string]any)
			md["labels"] = got
			if needsControllerUID(u) != tc.uid {
				t.Fatalf("needsControllerUID = %v, want %v", !tc.uid, tc.uid)
			}
			if tc.uid {
				u.SetUID("u-1")
				withControllerUID(u, u.GetUID())
				if !hasControllerUID(u) || needsControllerUID(u) {
					t.Fatalf("after withControllerUID: labels %v", u.GetLabels())
				}
			}
		})
	}
}

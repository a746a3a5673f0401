package reconcile

import (
	"maps"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/driftguard/driftguard/apply"
	"github.com/driftguard/driftguard/render"
)

func TestSyncHooksKeepServerDefaultedLabels(t *testing.T) {
	for _, tc := range []struct {
		name, manifest string
		want           map[string]string
	}{
		{name: "a hook Job without labels", manifest: `apiVersion: batch/v1
kind: Job
metadata: {name: migrate, namespace: ns}
spec: {template: {metadata: {labels: {app: db}}, spec: {containers: [{name: m, image: busybox}]}}}`,
			want: map[string]string{"app": "db", apply.JobNameLabel: "migrate", apply.LegacyJobNameLabel: "migrate", HookLabel: "g"}},
		{name: "a hook Job named by generateName", manifest: `apiVersion: batch/v1
kind: Job
metadata: {generateName: migrate-, namespace: ns}
spec: {template: {spec: {containers: [{name: m, image: busybox}]}}}`,
			want: map[string]string{HookLabel: "g"}},
		{name: "a hook Job Git labels", manifest: `apiVersion: batch/v1
kind: Job
metadata: {name: migrate, namespace: ns, labels: {team: db}}
spec: {template: {metadata: {labels: {app: db}}, spec: {containers: [{name: m, image: busybox}]}}}`,
			want: map[string]string{"team": "db", HookLabel: "g"}},
		{name: "a hook Job labelled only with the guard's label", manifest: `apiVersion: batch/v1
kind: Job
metadata: {name: migrate, namespace: ns, labels: {driftguard.io/guard: g}}
spec: {template: {spec: {containers: [{name: m, image: busybox}]}}}`,
			want: map[string]string{apply.JobNameLabel: "migrate", apply.LegacyJobNameLabel: "migrate", HookLabel: "g"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			u := &unstructured.Unstructured{}
			if err := yaml.Unmarshal([]byte(tc.manifest), &u.Object); err != nil {
				t.Fatal(err)
			}
			plan := &SyncPlan{Hooks: []*Hook{{Object: render.NewObject(u, render.Source{Path: "hook.yaml", Line: 1})}}}
			hooks := SyncHooks(nil, "g", plan)
			if got := hooks[0].Object.Obj().GetLabels(); !maps.Equal(got, tc.want) {
				t.Fatalf("labels %v, want %v", got, tc.want)
			}
			// Labelled with its controller-uid once created: unless Git
			// gave it labels.
			if want := tc.want["team"] == ""; hooks[0].ServerLabels != want {
				t.Fatalf("ServerLabels %v, want %v", hooks[0].ServerLabels, want)
			}
		})
	}
}

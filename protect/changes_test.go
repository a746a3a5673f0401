package protect

import (
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/utils/ptr"

	"github.com/driftguard/driftguard/api/v1alpha1"
)

func TestSpecChanges(t *testing.T) {
	for _, tc := range []struct {
		name          string
		before, after any
		want          map[string]string // path -> change ("" for a changed value)
	}{
		{name: "nothing changed", before: &v1alpha1.GuardSpec{Enforcement: v1alpha1.EnforcementDeny},
			after: &v1alpha1.GuardSpec{Enforcement: v1alpha1.EnforcementDeny}, want: map[string]string{}},
		{name: "a Guard switched to warn", before: &v1alpha1.GuardSpec{Enforcement: v1alpha1.EnforcementDeny},
			after: &v1alpha1.GuardSpec{Enforcement: v1alpha1.EnforcementWarn}, want: map[string]string{"/spec/enforcement": ""}},
		{name: "a Guard suspended", before: &v1alpha1.GuardSpec{},
			after: &v1alpha1.GuardSpec{Suspend: true}, want: map[string]string{"/spec/suspend": ""}},
		{name: "the guard's Deployment scaled to zero", before: &appsv1.DeploymentSpec{Replicas: ptr.To[int32](2)},
			after: &appsv1.DeploymentSpec{Replicas: ptr.To[int32](0)}, want: map[string]string{"/spec/replicas": ""}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := map[string]string{}
			for _, f := range specChanges(tc.before, tc.after) {
				got[f.Path] = f.Change
			}
			if len(got) != len(tc.want) {
				t.Fatalf("changes = %v, want %v", got, tc.want)
			}
			for path, change := range tc.want {
				if c, ok := got[path]; !ok || c != change {
					t.Fatalf("changes = %v, want %v", got, tc.want)
				}
			}
		})
	}
}

package informer

import (
	"errors"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/driftguard/driftguard/api/v1alpha1"
)

func TestAttribute(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	at := func(d time.Duration) *metav1.Time { v := metav1.NewTime(t0.Add(d)); return &v }
	stamp := func(user string, d time.Duration) string {
		return v1alpha1.ChangedBy{User: user, Groups: []string{"sre"}, Time: t0.Add(d)}.String()
	}
	tests := []struct {
		name       string
		managers   []metav1.ManagedFieldsEntry
		stamp      string
		user, mgr  string
		wantGroups bool
	}{
		{"no managers", nil, "", "unknown", "unknown", false},
		{"only the guard", []metav1.ManagedFieldsEntry{{Manager: "driftguard", Time: at(0)}}, "", "unknown", "unknown", false},
		{"newest other manager", []metav1.ManagedFieldsEntry{
			{Manager: "driftguard", Time: at(time.Minute)}, {Manager: "kubectl-edit", Time: at(0)}, {Manager: "kubectl-patch", Time: at(time.Second)},
		}, "", "kubectl-patch", "kubectl-patch", false},
		{"stamp of the newest change names the person", []metav1.ManagedFieldsEntry{{Manager: "kubectl-patch", Time: at(10 * time.Second)}},
			stamp("alice", 10*time.Second), "alice", "kubectl-patch", true},
		{"stale stamp is ignored", []metav1.ManagedFieldsEntry{{Manager: "helm", Time: at(time.Hour)}},
			stamp("alice", 0), "helm", "helm", false},
		{"garbage stamp is ignored", []metav1.ManagedFieldsEntry{{Manager: "kubectl-patch", Time: at(0)}}, "{not json", "kubectl-patch", "kubectl-patch", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			u := &unstructured.Unstructured{Object: map[string]any{}}
			u.SetManagedFields(tt.managers)
			if tt.stamp != "" {
				u.SetAnnotations(map[string]string{v1alpha1.ChangedByAnnotation: tt.stamp})
			}
			got := attribute(u)
			if got.user != tt.user || got.manager != tt.mgr || (len(got.groups) > 0) != tt.wantGroups {
				t.Fatalf("attribute = %+v, want user %q manager %q groups %v", got, tt.user, tt.mgr, tt.wantGroups)
			}
		})
	}
}

func TestStripForCacheKeepsAttribution(t *testing.T) {
	u := &unstructured.Unstructured{Object: map[string]any{}}
	now := metav1.Now()
	u.SetManagedFields([]metav1.ManagedFieldsEntry{
		{Manager: "driftguard", Time: &now, FieldsV1: metav1.NewFieldsV1(`{"f:data":{}}`)},
		{Manager: "kubectl", Time: &now, FieldsV1: metav1.NewFieldsV1(`{"f:data":{}}`)},
	})
	u.SetAnnotations(map[string]string{"kubectl.kubernetes.io/last-applied-configuration": "{}", "keep": "me"})
	u.Object["status"] = map[string]any{"replicas": int64(3)}
	out, err := stripForCache(u)
	if err != nil {
		t.Fatal(err)
	}
	s := out.(*unstructured.Unstructured)
	mf := s.GetManagedFields()
	if len(mf) != 2 || mf[0].FieldsV1 != nil || mf[1].Manager != "kubectl" || mf[1].FieldsV1 == nil {
		t.Fatalf("managed fields = %+v", mf)
	}
	if _, ok := s.Object["status"]; ok {
		t.Fatal("status kept in the cache")
	}
	if ann := s.GetAnnotations(); len(ann) != 1 || ann["keep"] != "me" {
		t.Fatalf("annotations = %v", ann)
	}
}

func TestRevertFailureRecordedOncePerState(t *testing.T) {
	s := newDriftState()
	it := item{name: "cm"}
	live := &unstructured.Unstructured{Object: map[string]any{}}
	live.SetResourceVersion("7")
	errA, errB := errors.New("admission webhook denied"), errors.New("forbidden")
	steps := []struct {
		rv   string
		err  error
		seen bool
	}{
		{"7", errA, false}, {"7", errA, true}, {"7", errA, true}, // retries of one failure: once
		{"7", errB, false}, // another error
		{"8", errB, false}, // another state
	}
	for i, st := range steps {
		live.SetResourceVersion(st.rv)
		if got := s.failedBefore(it, live, st.err); got != st.seen {
			t.Fatalf("step %d: failedBefore = %v, want %v", i, got, st.seen)
		}
	}
	s.clear(it)
	if s.failedBefore(it, live, errB) {
		t.Fatal("a cleared object's failure must be recorded again")
	}
}

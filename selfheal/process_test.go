package selfheal

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"errors"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/driftguard/driftguard/api/v1alpha1"
	"github.com/driftguard/driftguard/render"
	"github.com/driftguard/driftguard/stamp"
)

func TestAttribute(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	seen := t0.Add(time.Hour)
	at := func(d time.Duration) *metav1.Time { v := metav1.NewTime(t0.Add(d)); return &v }
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	signer := stamp.NewSigner(stamp.KeyFromCertificate(func(*tls.ClientHelloInfo) (*tls.Certificate, error) {
		return &tls.Certificate{PrivateKey: key}, nil
	}))
	obj := render.ObjectKey{Kind: "ConfigMap", Namespace: "shop", Name: "cfg"}
	issued := func(user string, d time.Duration, object render.ObjectKey) string {
		v, err := signer.Issue(v1alpha1.ChangedBy{User: user, Groups: []string{"sre"}, Time: t0.Add(d)}, object.String())
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	forged := v1alpha1.ChangedBy{User: "bob", Groups: []string{"sre"}, Time: t0.Add(10 * time.Second)}.String()
	tests := []struct {
		name       string
		managers   []metav1.ManagedFieldsEntry
		stamp      string
		user, mgr  string
		wantGroups bool
	}{
		{"no managers", nil, "", "unknown", "unknown", false},
		{"only the guard", []metav1.ManagedFieldsEntry{{Manager: "driftguard", Time: at(0)}}, "", "unknown", "unknown", false},
		{"a manager name is no identity", []metav1.ManagedFieldsEntry{
			{Manager: "driftguard", Time: at(time.Minute)}, {Manager: "kubectl-edit", Time: at(0)}, {Manager: "kube-controller-manager", Time: at(time.Second)},
		}, "", "unknown", "kube-controller-manager", false},
		{"verified stamp of the newest change names the person", []metav1.ManagedFieldsEntry{{Manager: "kubectl-patch", Time: at(10 * time.Second)}},
			issued("alice", 10*time.Second, obj), "alice", "kubectl-patch", true},
		{"stamp written by hand is ignored", []metav1.ManagedFieldsEntry{{Manager: "kubectl-patch", Time: at(10 * time.Second)}},
			forged, "unknown", "kubectl-patch", false},
		{"stamp of another object is ignored", []metav1.ManagedFieldsEntry{{Manager: "kubectl-patch", Time: at(10 * time.Second)}},
			issued("alice", 10*time.Second, render.ObjectKey{Kind: "ConfigMap", Namespace: "shop", Name: "other"}), "unknown", "kubectl-patch", false},
		{"stale stamp is ignored", []metav1.ManagedFieldsEntry{{Manager: "helm", Time: at(time.Hour)}},
			issued("alice", 0, obj), "unknown", "helm", false},
		{"garbage stamp is ignored", []metav1.ManagedFieldsEntry{{Manager: "kubectl-patch", Time: at(0)}}, "{not json", "unknown", "kubectl-patch", false},
	}
	w := &Watcher{Stamps: signer}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			u := &unstructured.Unstructured{Object: map[string]any{}}
			u.SetManagedFields(tt.managers)
			if tt.stamp != "" {
				u.SetAnnotations(map[string]string{v1alpha1.ChangedByAnnotation: tt.stamp})
			}
			got := w.attribute(u, obj, seen)
			if got.user != tt.user || got.manager != tt.mgr || (len(got.groups) > 0) != tt.wantGroups {
				t.Fatalf("attribute = %+v, want user %q manager %q groups %v", got, tt.user, tt.mgr, tt.wantGroups)
			}
			if !got.verified && !got.at.Equal(seen) {
				t.Fatalf("an unverified change is timed from when the guard saw it, got %v", got.at)
			}
		})
	}
}

// TestAttributeAPIServerStamp: the API server's stamp names the writer of
// the object's newest write, unless that write was of a subresource, which
// the stamp policy does not match.
func TestAttributeAPIServerStamp(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	at := func(d time.Duration) *metav1.Time { v := metav1.NewTime(t0.Add(d)); return &v }
	obj := render.ObjectKey{Group: "apps", Kind: "Deployment", Namespace: "shop", Name: "web"}
	tests := []struct {
		name     string
		managers []metav1.ManagedFieldsEntry
		user     string
	}{
		{"a write of the object", []metav1.ManagedFieldsEntry{{Manager: "kubectl-patch", Time: at(time.Minute)}, {Manager: "kubectl-scale", Subresource: "scale", Time: at(0)}}, "alice"},
		{"a write of /scale after it", []metav1.ManagedFieldsEntry{{Manager: "kubectl-patch", Time: at(0)}, {Manager: "kubectl-scale", Subresource: "scale", Time: at(time.Minute)}}, "unknown"},
		{"a controller's status after it", []metav1.ManagedFieldsEntry{{Manager: "kubectl-patch", Time: at(0)}, {Manager: "kube-controller-manager", Subresource: "status", Time: at(time.Minute)}}, "alice"},
		// Created annotated (no stamp policy matches a create), then
		// applied by the guard: the annotation is the creator's word.
		{"the guard's apply after it", []metav1.ManagedFieldsEntry{{Manager: "kubectl-create", Time: at(0)}, {Manager: "driftguard", Operation: "Apply", Time: at(time.Minute)}}, "unknown"},
		{"the guard's apply in the same second", []metav1.ManagedFieldsEntry{{Manager: "kubectl-patch", Time: at(0)}, {Manager: "driftguard", Operation: "Apply", Time: at(0)}}, "alice"},
		{"a write after the guard's apply", []metav1.ManagedFieldsEntry{{Manager: "driftguard", Operation: "Apply", Time: at(0)}, {Manager: "kubectl-patch", Time: at(time.Minute)}}, "alice"},
		{"a namespace the policy's binding leaves out", []metav1.ManagedFieldsEntry{{Manager: "kubectl-patch", Time: at(time.Minute)}}, "unknown"},
		{"a resource the policy does not match", []metav1.ManagedFieldsEntry{{Manager: "kubectl-patch", Time: at(time.Minute)}}, "unknown"},
	}
	// The stamp policy's binding leaves out namespace "excluded"; it
	// matches ConfigMaps, not Secrets.
	w := &Watcher{APIServerStamps: func(ns string, gvk schema.GroupVersionKind) bool { return ns != "excluded" && gvk.Kind == "ConfigMap" }}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap"}}
			if strings.Contains(tt.name, "leaves out") {
				u.SetNamespace("excluded")
			}
			if strings.Contains(tt.name, "does not match") {
				u.SetKind("Secret")
			}
			u.SetManagedFields(tt.managers)
			u.SetAnnotations(map[string]string{v1alpha1.APIServerChangedByAnnotation: "alice"})
			if got := w.attribute(u, obj, t0); got.user != tt.user || got.verified != (tt.user != "unknown") {
				t.Fatalf("attribute = %+v, want user %q", got, tt.user)
			}
		})
	}
}

func TestStripForCacheKeepsAttribution(t *testing.T) {
	u := &unstructured.Unstructured{Object: map[string]any{}}
	now := metav1.Now()
	u.SetManagedFields([]metav1.ManagedFieldsEntry{
		{Manager: "driftguard", Operation: "Apply", Time: &now, FieldsV1: metav1.NewFieldsV1(`{"f:data":{}}`)},
		{Manager: "kubectl", Time: &now, FieldsV1: metav1.NewFieldsV1(`{"f:data":{}}`)},
		{Manager: "driftguard", Operation: "Update", Time: &now, FieldsV1: metav1.NewFieldsV1(`{"f:data":{}}`)},
	})
	u.SetAnnotations(map[string]string{"kubectl.kubernetes.io/last-applied-configuration": "{}", "keep": "me"})
	u.Object["status"] = map[string]any{"replicas": int64(3)}
	out, err := stripForCache(u)
	if err != nil {
		t.Fatal(err)
	}
	s := out.(*unstructured.Unstructured)
	mf := s.GetManagedFields()
	// The guard's apply entry loses its set; its patches' (which a writer
	// may borrow the name for) and other managers' keep theirs.
	if len(mf) != 3 || mf[0].FieldsV1 != nil || mf[1].Manager != "kubectl" || mf[1].FieldsV1 == nil || mf[2].FieldsV1 == nil {
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

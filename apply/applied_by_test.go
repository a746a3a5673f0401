package apply

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

func TestAppliedBy(t *testing.T) {
	mf := func(manager string, op metav1.ManagedFieldsOperationType, sub string) metav1.ManagedFieldsEntry {
		return metav1.ManagedFieldsEntry{Manager: manager, Operation: op, Subresource: sub, APIVersion: "v1"}
	}
	tests := []struct {
		name    string
		guard   string
		labels  map[string]string
		entries []metav1.ManagedFieldsEntry
		want    bool
	}{
		{"the guard's apply and label", "shop", map[string]string{GuardLabel: "shop"}, []metav1.ManagedFieldsEntry{mf("kubectl-edit", metav1.ManagedFieldsOperationUpdate, ""), mf(FieldManager, metav1.ManagedFieldsOperationApply, "")}, true},
		{"no label", "shop", nil, []metav1.ManagedFieldsEntry{mf(FieldManager, metav1.ManagedFieldsOperationApply, "")}, false},
		{"another Guard's label", "shop", map[string]string{GuardLabel: "other"}, []metav1.ManagedFieldsEntry{mf(FieldManager, metav1.ManagedFieldsOperationApply, "")}, false},
		{"labelled, created by someone else", "shop", map[string]string{GuardLabel: "shop"}, []metav1.ManagedFieldsEntry{mf("kubectl-create", metav1.ManagedFieldsOperationUpdate, "")}, false},
		{"the guard's update, not an apply (createNamespace, annotations)", "shop", map[string]string{GuardLabel: "shop"}, []metav1.ManagedFieldsEntry{mf(FieldManager, metav1.ManagedFieldsOperationUpdate, "")}, false},
		{"the guard's apply of the status only", "shop", map[string]string{GuardLabel: "shop"}, []metav1.ManagedFieldsEntry{mf(FieldManager, metav1.ManagedFieldsOperationApply, "status")}, false},
		{"no guard named", "", map[string]string{GuardLabel: ""}, []metav1.ManagedFieldsEntry{mf(FieldManager, metav1.ManagedFieldsOperationApply, "")}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			u := &unstructured.Unstructured{}
			u.SetAPIVersion("v1")
			u.SetKind("ConfigMap")
			u.SetName("cfg")
			u.SetUID("u-1")
			u.SetLabels(tt.labels)
			u.SetManagedFields(tt.entries)
			uid, ok := AppliedBy(u, tt.guard)
			if ok != tt.want || (ok && uid != "u-1") {
				t.Errorf("AppliedBy = %q, %v; want %v", uid, ok, tt.want)
			}
		})
	}
}

// Package v1alpha1 holds the Guard API: one Guard names one Git source and how
// driftguard keeps the cluster equal to it.
//
// +kubebuilder:object:generate=true
// +groupName=driftguard.io
package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// GroupVersion is the API group and version of the Guard type.
var GroupVersion = schema.GroupVersion{Group: "driftguard.io", Version: "v1alpha1"}

// AddToScheme adds the types of this package to a scheme.
func AddToScheme(s *runtime.Scheme) error {
	s.AddKnownTypes(GroupVersion, &Guard{}, &GuardList{})
	metav1.AddToGroupVersion(s, GroupVersion)
	return nil
}

// Package v1alpha1 holds the Guard API: one Guard names one Git source and how
// driftguard keeps the cluster equal to it.
//
// +kubebuilder:object:generate=true
// +groupName=driftguard.io
package v1alpha1

import (
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/scheme"
)

var (
	// GroupVersion is the API group and version of the Guard type.
	GroupVersion = schema.GroupVersion{Group: "driftguard.io", Version: "v1alpha1"}

	// SchemeBuilder registers the types of this package with a scheme.
	SchemeBuilder = &scheme.Builder{GroupVersion: GroupVersion}

	// AddToScheme adds the types of this package to a scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)

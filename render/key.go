package render

import (
	"cmp"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// ObjectKey identifies a Kubernetes object independent of its API version.
type ObjectKey struct{ Group, Kind, Namespace, Name string }

// KeyOf returns the key of u.
func KeyOf(u *unstructured.Unstructured) ObjectKey {
	gvk := u.GroupVersionKind()
	name := u.GetName()
	if name == "" {
		// A hook that names only a prefix (its name is given at create).
		name = u.GetGenerateName()
	}
	return ObjectKey{Group: gvk.Group, Kind: gvk.Kind, Namespace: u.GetNamespace(), Name: name}
}

// String returns "group/Kind/namespace/name", e.g. "apps/Deployment/shop/web",
// "/ConfigMap/shop/cfg" for the core group and "/Namespace//shop" for a
// cluster-scoped object.
func (k ObjectKey) String() string {
	return k.Group + "/" + k.Kind + "/" + k.Namespace + "/" + k.Name
}

// Display names the object as a person would: "Kind namespace/name", or
// "Kind name" for a cluster-scoped object.
func (k ObjectKey) Display() string {
	if k.Namespace == "" {
		return k.Kind + " " + k.Name
	}
	return k.Kind + " " + k.Namespace + "/" + k.Name
}

// CompareKeys orders keys by kind, namespace, name and group, as a person
// reads a list of them.
func CompareKeys(a, b ObjectKey) int {
	return cmp.Or(cmp.Compare(a.Kind, b.Kind), cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Name, b.Name), cmp.Compare(a.Group, b.Group))
}

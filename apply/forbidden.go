package apply

import (
	"errors"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// explainForbidden turns the API server's "forbidden" for an object the guard
// writes into an error that names the kind, and says where the permission is
// granted: the guard's RBAC covers only the kinds it was given (the chart's
// rbac.managedResources). Other errors are returned as they are.
func explainForbidden(err error, gvk schema.GroupVersionKind) error {
	if !apierrors.IsForbidden(err) {
		return err
	}
	group := gvk.Group
	resource := ""
	var status apierrors.APIStatus
	if errors.As(err, &status) && status.Status().Details != nil {
		resource = status.Status().Details.Kind // the resource, e.g. "secrets"
		if g := status.Status().Details.Group; g != "" {
			group = g
		}
	}
	if resource == "" {
		resource = "the resource of kind " + gvk.Kind
	}
	groupName := group
	if groupName == "" {
		groupName = `"" (core)`
	}
	return fmt.Errorf("RBAC forbids the guard to manage kind %s (resource %s, API group %s): grant it in the chart's rbac.managedResources, or (with rbac.clusterWide=false) give the Guard a service account that may (spec.serviceAccountName, --default-service-account): %w",
		gvk.Kind, resource, groupName, err)
}

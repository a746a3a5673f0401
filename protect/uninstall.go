package protect

import (
	"context"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// DeploymentGone reports whether the guard's own Deployment is deleted or
// being deleted, or the guard may no longer read it (its Role went first):
// the guard is being uninstalled.
func DeploymentGone(ctx context.Context, kube kubernetes.Interface, namespace, name string) bool {
	d, err := kube.AppsV1().Deployments(namespace).Get(ctx, name, metav1.GetOptions{})
	return apierrors.IsNotFound(err) || apierrors.IsForbidden(err) || (err == nil && d.DeletionTimestamp != nil)
}

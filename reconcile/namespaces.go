package reconcile

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/driftguard/driftguard/apply"
	"github.com/driftguard/driftguard/render"
)

// CreatedByAnnotation marks a namespace the guard created for a Guard with
// spec.createNamespace. Such a namespace carries no inventory label: it is
// neither guarded nor pruned, as Argo CD's CreateNamespace does.
const CreatedByAnnotation = "driftguard.io/created-by"

// missingNamespaces lists the namespaces objects of snap (and hooks) live
// in that snap does not declare itself, in first-seen order.
func missingNamespaces(snap *render.Snapshot, hooks []*Hook) []string {
	declared := map[string]bool{}
	for _, o := range snap.Objects {
		if o.Key.Group == "" && o.Key.Kind == "Namespace" {
			declared[o.Key.Name] = true
		}
	}
	objs := snap.Objects
	for _, h := range hooks {
		objs = append(objs[:len(objs):len(objs)], h.Object)
	}
	var out []string
	for _, o := range objs {
		ns := o.Key.Namespace
		if ns != "" && !declared[ns] {
			declared[ns] = true
			out = append(out, ns)
		}
	}
	return out
}

// EnsureNamespaces creates the namespaces that snap's objects and hooks
// need and Git does not declare, unless they exist. It returns the ones it
// created.
func (a engine) EnsureNamespaces(ctx context.Context, guard string, snap *render.Snapshot, hooks []*Hook) ([]string, error) {
	var created []string
	for _, name := range missingNamespaces(snap, hooks) {
		var ns corev1.Namespace
		err := a.APIReader().Get(ctx, client.ObjectKey{Name: name}, &ns)
		if err == nil {
			continue
		}
		if !apply.IsNotFoundOrGone(err) {
			return created, fmt.Errorf("namespace %s: %w", name, err)
		}
		ns = corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: map[string]string{CreatedByAnnotation: guard}}}
		if err := a.Client.Create(ctx, &ns, client.FieldOwner(apply.FieldManager)); err != nil && !apierrors.IsAlreadyExists(err) {
			return created, fmt.Errorf("create namespace %s (spec.createNamespace): %w", name, a.ExplainForbidden(err, "create", corev1.SchemeGroupVersion.WithKind("Namespace"), ""))
		}
		created = append(created, name)
	}
	return created, nil
}

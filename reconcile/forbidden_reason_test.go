package reconcile

import (
	"errors"
	"fmt"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/driftguard/driftguard/api/v1alpha1"
	"github.com/driftguard/driftguard/apply"
)

// TestForbiddenOr: a write the Guard's service account may not make
// (apply.ForbiddenError, however wrapped) is the condition reason
// Forbidden; the guard's own RBAC refusal and other errors keep the reason
// given (apply.TestForbiddenNamesIdentity says what each error says).
func TestForbiddenOr(t *testing.T) {
	gvk := schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"}
	denied := apierrors.NewForbidden(schema.GroupResource{Group: "apps", Resource: "deployments"}, "web",
		errors.New(`User "system:serviceaccount:dg:team-a" cannot delete resource "deployments" in API group "apps" in the namespace "b"`))
	id := apply.Identity{User: "system:serviceaccount:dg:team-a", Namespace: "dg", Name: "team-a", Field: apply.FieldServiceAccountName}
	for _, tc := range []struct {
		name string
		err  error
		want string
	}{
		{"service account", &apply.ForbiddenError{Identity: id, Verb: "delete", Resource: "deployments.apps", Namespace: "b", RBAC: true, Err: denied}, v1alpha1.ReasonForbidden},
		{"service account, wrapped", fmt.Errorf("prune x: %w", &apply.ForbiddenError{Identity: id, Verb: "delete", Resource: "deployments.apps", Err: denied}), v1alpha1.ReasonForbidden},
		{"guard's own", (&apply.Applier{}).ExplainForbidden(denied, "delete", gvk, "b"), v1alpha1.ReasonApplyFailed},
		{"not forbidden", (&apply.Applier{}).ExplainForbidden(apierrors.NewNotFound(schema.GroupResource{Resource: "x"}, "y"), "delete", gvk, "b"), v1alpha1.ReasonApplyFailed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := forbiddenOr(tc.err, v1alpha1.ReasonApplyFailed); got != tc.want {
				t.Errorf("reason %s, want %s", got, tc.want)
			}
		})
	}
}

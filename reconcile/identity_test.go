package reconcile

import (
	"context"
	"errors"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/driftguard/driftguard/api/v1alpha1"
)

func TestServiceAccountOf(t *testing.T) {
	for _, tc := range []struct {
		name, field, def, wantName, wantField string
		nilIDs                                bool
	}{
		{name: "no identities", nilIDs: true, field: "team-a"},
		{name: "neither: the guard's own"},
		{name: "field", field: "team-a", wantName: "team-a", wantField: FieldServiceAccountName},
		{name: "default", def: "tenant", wantName: "tenant", wantField: FlagDefaultServiceAccount},
		{name: "field wins over default", field: "team-a", def: "tenant", wantName: "team-a", wantField: FieldServiceAccountName},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ids := &Identities{Namespace: "driftguard-system", Default: tc.def}
			if tc.nilIDs {
				ids = nil
			}
			g := &v1alpha1.Guard{Spec: v1alpha1.GuardSpec{ServiceAccountName: tc.field}}
			name, field := ids.ServiceAccountOf(g)
			if name != tc.wantName || field != tc.wantField {
				t.Fatalf("got %q from %q, want %q from %q", name, field, tc.wantName, tc.wantField)
			}
		})
	}
}

// TestIdentityRefusesGuardItself: naming the guard's own service account
// would be no restriction; it is refused before anything is read.
func TestIdentityRefusesGuardItself(t *testing.T) {
	ids := &Identities{Namespace: "dg", Self: "system:serviceaccount:dg:driftguard"}
	g := &v1alpha1.Guard{Spec: v1alpha1.GuardSpec{ServiceAccountName: "driftguard"}}
	g.Name = "shop"
	_, err := ids.For(context.Background(), g)
	var ie *IdentityError
	if !errors.As(err, &ie) || ie.Reason != v1alpha1.ReasonInvalidServiceAccount || !strings.Contains(err.Error(), "guard's own service account") {
		t.Fatalf("got %v, want an InvalidServiceAccount IdentityError", err)
	}
}

// TestForbiddenNamesIdentity: a write the service account may not make is
// reported with the account, the verb, the resource and the namespace;
// under the guard's own identity it points at the chart's RBAC as before.
func TestForbiddenNamesIdentity(t *testing.T) {
	gvk := schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"}
	denied := apierrors.NewForbidden(schema.GroupResource{Group: "apps", Resource: "deployments"}, "web",
		errors.New(`User "system:serviceaccount:dg:team-a" cannot delete resource "deployments" in API group "apps" in the namespace "b"`))
	admission := apierrors.NewForbidden(schema.GroupResource{Group: "apps", Resource: "deployments"}, "web",
		errors.New(`ValidatingAdmissionPolicy 'x' with binding 'x' denied request: no`))
	id := Identity{User: "system:serviceaccount:dg:team-a", Namespace: "dg", Name: "team-a", Field: FieldServiceAccountName}
	for _, tc := range []struct {
		name, ns  string
		a         *Applier
		err       error
		forbidden bool // a ForbiddenError, reason Forbidden
		want      []string
	}{
		{"guard's own", "b", (&Applier{}).As(Identity{Client: nil}), denied, false, []string{"RBAC forbids the guard"}},
		{"service account", "b", &Applier{identity: id}, denied, true, []string{"service account dg/team-a", "spec.serviceAccountName",
			"system:serviceaccount:dg:team-a", "may not delete deployments.apps in namespace b", "Role and RoleBinding in b"}},
		{"service account, guard's namespace", "dg", &Applier{identity: id}, denied, true, []string{"may not delete deployments.apps in namespace dg",
			"the guard's own namespace, where no Guard's service account should write"}},
		{"service account, cluster-scoped", "", &Applier{identity: id}, denied, true, []string{"cluster-wide", "ClusterRole and ClusterRoleBinding"}},
		{"service account, refused by admission", "b", &Applier{identity: id}, admission, true, []string{"may not delete deployments.apps in namespace b: an admission check refused it, not RBAC"}},
		{"not forbidden", "b", &Applier{identity: id}, apierrors.NewNotFound(schema.GroupResource{Resource: "x"}, "y"), false, []string{`x "y" not found`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := tc.a.forbidden(tc.err, "delete", gvk, tc.ns)
			for _, w := range tc.want {
				if !strings.Contains(got.Error(), w) {
					t.Errorf("%q does not say %q", got, w)
				}
			}
			var fe *ForbiddenError
			if isFE := errors.As(got, &fe); isFE != tc.forbidden {
				t.Errorf("ForbiddenError: %v", isFE)
			}
			if (forbiddenOr(got, v1alpha1.ReasonApplyFailed) == v1alpha1.ReasonForbidden) != tc.forbidden {
				t.Errorf("reason %s", forbiddenOr(got, v1alpha1.ReasonApplyFailed))
			}
		})
	}
}

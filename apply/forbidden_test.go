package apply

import (
	"errors"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

func TestExplainForbidden(t *testing.T) {
	secret := schema.GroupVersionKind{Version: "v1", Kind: "Secret"}
	forbidden := apierrors.NewForbidden(schema.GroupResource{Resource: "secrets"}, "creds",
		errors.New(`User "system:serviceaccount:dg:guard" cannot patch resource "secrets" in API group "" in the namespace "team-b"`))
	for _, tc := range []struct {
		name string
		err  error
		want []string
		same bool
	}{
		{name: "forbidden names kind, resource, verb and the value to change", err: forbidden,
			want: []string{"kind Secret", "resource secrets", `API group "" (core)`, "rbac.managedResources", "spec.serviceAccountName", "cannot patch"}},
		{name: "other errors unchanged", err: apierrors.NewNotFound(schema.GroupResource{Resource: "secrets"}, "creds"), same: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := explainForbidden(tc.err, secret)
			if tc.same {
				if got != tc.err {
					t.Fatalf("error changed: %v", got)
				}
				return
			}
			if !errors.Is(got, tc.err) && !apierrors.IsForbidden(got) {
				t.Errorf("wrapped error lost its cause: %v", got)
			}
			for _, w := range tc.want {
				if !strings.Contains(got.Error(), w) {
					t.Errorf("%q lacks %q", got, w)
				}
			}
		})
	}
}

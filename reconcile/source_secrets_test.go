package reconcile

import (
	"context"
	"slices"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/driftguard/driftguard/api/v1alpha1"
)

// TestRequestMarksSecretValues: the render of a Guard's request knows which
// of its values come from Secrets (the credentials' secret parts, the
// variables of varsFrom Secrets, not those spec.vars overrides) so that it
// marks them sensitive; user names are not secret.
func TestRequestMarksSecretValues(t *testing.T) {
	c := secrets{
		{Namespace: "driftguard", Name: "basic"}: {"username": []byte("deploy-user"), "password": []byte("git-password-1")},
		{Namespace: "driftguard", Name: "token"}: {"bearerToken": []byte("chart-token-1")},
		{Namespace: "driftguard", Name: "vars"}:  {"DB_PASS": []byte("var-from-secret"), "REGION": []byte("overridden-by-spec")},
	}
	tests := []struct {
		name            string
		spec            v1alpha1.GuardSpec
		wantCredentials []string
		wantSecretVars  []string
	}{
		{"git basic auth", v1alpha1.GuardSpec{Git: &v1alpha1.GitSource{URL: "https://git.example/infra.git", SecretRef: &v1alpha1.SecretReference{Name: "basic"}}}, []string{"git-password-1"}, nil},
		{"chart repository token", v1alpha1.GuardSpec{HelmRepository: &v1alpha1.HelmRepositorySource{URL: "https://charts.example", Chart: "web", SecretRef: &v1alpha1.SecretReference{Name: "token"}}},
			[]string{"chart-token-1"}, nil},
		{"variables from a Secret", v1alpha1.GuardSpec{Git: &v1alpha1.GitSource{URL: "https://git.example/infra.git"},
			VarsFrom: []v1alpha1.VarsReference{{Kind: "Secret", Name: "vars"}}, Vars: map[string]string{"REGION": "eu"}}, nil, []string{"DB_PASS"}},
		{"nothing secret", v1alpha1.GuardSpec{Git: &v1alpha1.GitSource{URL: "https://git.example/infra.git"}, Vars: map[string]string{"A": "b"}}, nil, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req, err := Request(context.Background(), c, &v1alpha1.Guard{ObjectMeta: metav1.ObjectMeta{Name: "shop"}, Spec: tt.spec}, "driftguard")
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(req.Render.Credentials, tt.wantCredentials) {
				t.Errorf("Credentials = %q, want %q", req.Render.Credentials, tt.wantCredentials)
			}
			if !slices.Equal(req.Render.SecretVars, tt.wantSecretVars) {
				t.Errorf("SecretVars = %q, want %q", req.Render.SecretVars, tt.wantSecretVars)
			}
		})
	}
}

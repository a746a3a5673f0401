package identity

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/driftguard/driftguard/api/v1alpha1"
)

// TestHelmValuesFromReadAsTheAccount: spec.helm.valuesFrom is read as the
// Guard's service account, in the guard's namespace. A Guard whose account
// may not read the Secret it names is refused (RenderSettingsFailed,
// naming the field and the account) and applies nothing, though the guard
// itself could read it; a Role granting get on that one Secret lets it
// through. Another team's Secret in the same namespace stays out of reach:
// naming it fails the Guard and what was applied keeps its values.
func TestHelmValuesFromReadAsTheAccount(t *testing.T) {
	ctx := context.Background()
	ns := "identity-values"
	namespace(t, ns)
	tenant(t, "team-v", ns, configMapVerbs)
	own := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: guardNamespace, Name: "team-v-values"},
		StringData: map[string]string{"values.yaml": "token: team-v-token-value\n"}}
	other := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: guardNamespace, Name: "team-w-db"},
		StringData: map[string]string{"values.yaml": "token: team-w-secret-token\n"}}
	for _, s := range []*corev1.Secret{own, other} {
		if err := h.Admin.Create(ctx, s); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = h.Admin.Delete(ctx, s) })
	}
	repo := h.NewGuard(t, "identity-values", false, map[string]string{
		"chart/Chart.yaml":  "apiVersion: v2\nname: v\nversion: 0.1.0\n",
		"chart/values.yaml": "token: none\n",
		"chart/templates/cm.yaml": `apiVersion: v1
kind: ConfigMap
metadata:
  name: app
data:
  value: {{ .Values.token | quote }}
`,
	}, func(s *v1alpha1.GuardSpec) {
		s.Git.Path = "chart"
		s.ServiceAccountName = "team-v"
		s.Retry = quickRetry()
		s.Helm = &v1alpha1.HelmSpec{Namespace: ns, ValuesFrom: []v1alpha1.HelmValuesReference{{Kind: "Secret", Name: own.Name}}}
	})
	waitReady(t, repo.Guard, metav1.ConditionFalse, v1alpha1.ReasonRenderSettingsFailed,
		"spec.helm.valuesFrom[0]: secret driftguard-system/team-v-values",
		`User "system:serviceaccount:driftguard-system:team-v" cannot get resource "secrets"`)
	if exists(t, &corev1.ConfigMap{}, ns, "app") {
		t.Fatal("applied although the account may not read the values")
	}

	// get on that one Secret, by name, in the guard's namespace.
	role := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: guardNamespace, Name: "team-v-values"},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"secrets"}, Verbs: []string{"get"}, ResourceNames: []string{own.Name}}}}
	binding := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: guardNamespace, Name: "team-v-values"},
		RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: role.Name},
		Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Namespace: guardNamespace, Name: "team-v"}}}
	for _, o := range []client.Object{role, binding} {
		if err := h.Admin.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = h.Admin.Delete(ctx, o) })
	}
	h.WaitApplied(t, repo.Guard, repo.Initial)
	if v := value(t, ns, "app"); v != "team-v-token-value" {
		t.Fatalf("%s/app: %s, want the value of the Secret", ns, v)
	}

	// Another team's Secret of the same namespace: refused.
	g := h.Guard(t, repo.Guard)
	g.Spec.Helm.ValuesFrom = []v1alpha1.HelmValuesReference{{Kind: "Secret", Name: other.Name}}
	if err := h.Admin.Update(ctx, g); err != nil {
		t.Fatal(err)
	}
	waitReady(t, repo.Guard, metav1.ConditionFalse, v1alpha1.ReasonRenderSettingsFailed,
		"spec.helm.valuesFrom[0]: secret driftguard-system/team-w-db", `cannot get resource "secrets"`)
	if v := value(t, ns, "app"); v != "team-v-token-value" {
		t.Fatalf("%s/app: %s, want the value applied before", ns, v)
	}
}

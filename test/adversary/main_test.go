// Package adversary plays the people the guard guards against on a real
// kube-apiserver and etcd, with kubectl and client-go: a namespace editor
// (eve: an editor of her namespaces, no rights on the guard) tries
// each way around the guard (docs/security.md). In namespaces the webhook is
// registered for she is denied at admission; in namespaces it is not (as
// when the guard's webhook is down or fails open) the drift watcher puts
// Git's state back, removes what she added, and records her change as made
// by "unknown", never by the identity she claims.
package adversary

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/driftguard/driftguard/app"
	"github.com/driftguard/driftguard/test/harness"
)

var (
	h *harness.Harness
	// eve is a namespace editor: the edit ClusterRole in the namespaces
	// the tests give her (editorIn), nothing else.
	eve string
)

// unwatched are namespaces the webhooks are not registered for (as for
// kube-system): what happens there is what happens while the guard's webhook
// is down or fails open.
var unwatched = []string{"nowh-additions", "nowh-identity", "nowh-fight", "nowh-owner"}

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	policyDir, err := os.MkdirTemp("", "driftguard-policy-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(policyDir)
	if err := harness.WriteDefaultPolicy(policyDir, nil); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	h, err = harness.Start(harness.Options{Guard: func(o *app.Options) {
		o.PolicyDir = policyDir
		o.BreakGlassGroups = []string{"sre"}
		o.ExcludeNamespaces = append(o.ExcludeNamespaces, unwatched...)
	}})
	if err != nil {
		fmt.Fprintln(os.Stderr, "start harness:", err)
		return 1
	}
	defer h.Stop()
	if eve, _, err = h.Cluster.AddUser("eve", []string{"editors"}); err != nil {
		fmt.Fprintln(os.Stderr, "add eve:", err)
		return 1
	}
	if err := h.Admin.Create(context.Background(), editorRole()); err != nil {
		fmt.Fprintln(os.Stderr, "editor role:", err)
		return 1
	}
	return m.Run()
}

// editor is what a namespace editor may do: envtest runs no controller
// manager, so the built-in edit ClusterRole, which aggregation fills, is
// empty there; this one spells out its rules for the kinds the tests use.
const editor = "adversary-editor"

func editorRole() *rbacv1.ClusterRole {
	all := []string{"get", "list", "watch", "create", "update", "patch", "delete", "deletecollection"}
	return &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: editor},
		Rules: []rbacv1.PolicyRule{
			{APIGroups: []string{""}, Resources: []string{"configmaps", "secrets", "services", "pods", "pods/ephemeralcontainers", "pods/resize", "pods/eviction"}, Verbs: all},
			{APIGroups: []string{"apps"}, Resources: []string{"deployments", "deployments/scale"}, Verbs: all},
		},
	}
}

// editorIn makes eve an editor of namespace ns (which must exist).
func editorIn(t *testing.T, ns string) {
	t.Helper()
	bind(t, ns, rbacv1.UserKind, "eve")
}

// bind makes a user or group an editor of namespace ns.
func bind(t *testing.T, ns, kind, name string) {
	t.Helper()
	rb := &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: strings.ToLower(kind) + "-" + name + "-edits", Namespace: ns},
		RoleRef:    rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: editor},
		Subjects:   []rbacv1.Subject{{Kind: kind, APIGroup: "rbac.authorization.k8s.io", Name: name}},
	}
	if err := h.Admin.Create(context.Background(), rb); err != nil {
		t.Fatalf("bind %s %s to edit in %s: %v", kind, name, ns, err)
	}
}

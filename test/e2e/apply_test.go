package e2e

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/driftguard/driftguard/api/v1alpha1"
	"github.com/driftguard/driftguard/audit"
	"github.com/driftguard/driftguard/reconcile"
	"github.com/driftguard/driftguard/test/wait"
)

func getConfigMap(t *testing.T, ns, name string) (*corev1.ConfigMap, error) {
	t.Helper()
	var cm corev1.ConfigMap
	err := h.Admin.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, &cm)
	return &cm, err
}

func waitValue(t *testing.T, ns, name, want string) {
	t.Helper()
	wait.Eventually(t, 30*time.Second, fmt.Sprintf("configmap %s/%s value %q", ns, name, want), func() error {
		cm, err := getConfigMap(t, ns, name)
		if err != nil {
			return err
		}
		if cm.Data["value"] != want {
			return fmt.Errorf("value is %q", cm.Data["value"])
		}
		return nil
	})
}

func TestApplyUpdateAndPrune(t *testing.T) {
	t.Parallel()
	const ns = "apply-prune"
	repo := h.NewGuard(t, "apply-prune", true, map[string]string{
		"ns.yaml":   namespace(ns),
		"a.yaml":    configMap(ns, "a", "one"),
		"b/b.yaml":  configMap(ns, "b", "kept until removed"),
		"README.md": "not a manifest",
	})
	g := h.WaitApplied(t, repo.Guard, repo.Initial)
	if g.Status.ManagedObjects != 3 {
		t.Fatalf("managed objects = %d, want 3", g.Status.ManagedObjects)
	}
	cm, err := getConfigMap(t, ns, "a")
	if err != nil {
		t.Fatal(err)
	}
	if cm.Labels[reconcile.GuardLabel] != repo.Guard {
		t.Fatalf("inventory label = %q, want %q", cm.Labels[reconcile.GuardLabel], repo.Guard)
	}
	var applier string
	for _, mf := range cm.ManagedFields {
		if mf.Operation == "Apply" {
			applier = mf.Manager
		}
	}
	if applier != reconcile.FieldManager {
		t.Fatalf("server-side apply manager = %q, want %q", applier, reconcile.FieldManager)
	}

	rev := repo.Change(t, "change a, remove b", map[string]string{"a.yaml": configMap(ns, "a", "two")}, "b/b.yaml")
	h.WaitApplied(t, repo.Guard, rev)
	waitValue(t, ns, "a", "two")
	wait.Eventually(t, 30*time.Second, "b pruned", func() error {
		if _, err := getConfigMap(t, ns, "b"); !apierrors.IsNotFound(err) {
			return fmt.Errorf("b still there (err %v)", err)
		}
		return nil
	})
	h.Audit.Wait(t, 10*time.Second, "prune of b", func(r audit.Record) bool {
		return r.Type == audit.Prune && r.Guard == repo.Guard && r.Object.Name == "b" && r.Object.Kind == "ConfigMap" && r.Object.Version == "v1"
	})
	h.Audit.Wait(t, 10*time.Second, "apply of a", func(r audit.Record) bool {
		return r.Type == audit.Apply && r.Object.Name == "a" && r.Action == string(reconcile.Configured) && r.Source != nil && r.Source.Revision == rev && r.Source.Path == "a.yaml"
	})
	// The same records go to the --audit-file sink.
	wait.Eventually(t, 10*time.Second, "prune record in the audit file", func() error {
		b, err := os.ReadFile(h.AuditFile)
		if err != nil {
			return err
		}
		for _, line := range strings.Split(string(b), "\n") {
			if strings.Contains(line, `"type":"prune"`) && strings.Contains(line, `"guard":"apply-prune"`) && strings.Contains(line, `"name":"b"`) {
				return nil
			}
		}
		return fmt.Errorf("no prune record among %d bytes", len(b))
	})
}

func TestPruneOffKeepsRemovedObjects(t *testing.T) {
	t.Parallel()
	const ns = "prune-off"
	repo := h.NewGuard(t, "prune-off", false, map[string]string{
		"ns.yaml": namespace(ns),
		"a.yaml":  configMap(ns, "a", "one"),
		"b.yaml":  configMap(ns, "b", "stays"),
	})
	h.WaitApplied(t, repo.Guard, repo.Initial)
	rev := repo.Change(t, "remove b", nil, "b.yaml")
	// The status names rev only after that reconcile's prune step ran.
	h.WaitApplied(t, repo.Guard, rev)
	if _, err := getConfigMap(t, ns, "b"); err != nil {
		t.Fatalf("b was removed with prune off: %v", err)
	}
}

// TestPushReconcilesAtOnce: a push notification to the receiver applies the
// new commit without waiting for the interval (here an hour).
func TestPushReconcilesAtOnce(t *testing.T) {
	t.Parallel()
	const ns = "push"
	repo := h.NewGuard(t, "push", true, map[string]string{"ns.yaml": namespace(ns), "cm.yaml": configMap(ns, "cm", "one")},
		func(s *v1alpha1.GuardSpec) { s.Interval = metav1.Duration{Duration: time.Hour} })
	h.WaitApplied(t, repo.Guard, repo.Initial)
	rev := repo.Change(t, "two", map[string]string{"cm.yaml": configMap(ns, "cm", "two")})
	body := fmt.Sprintf(`{"ref":"refs/heads/main","repository":{"clone_url":%q}}`, repo.URL)
	// Without the receiver's token the push is refused and changes nothing.
	for _, token := range []string{"", "wrong", h.ReceiverToken} {
		req, err := http.NewRequest(http.MethodPost, h.ReceiverURL, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/json")
		if token != "" {
			req.Header.Set("X-Driftguard-Token", token)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		want := http.StatusUnauthorized
		if token == h.ReceiverToken {
			want = http.StatusAccepted
		}
		if resp.StatusCode != want {
			t.Fatalf("receiver answered %s to token %q, want %d", resp.Status, token, want)
		}
	}
	h.WaitApplied(t, repo.Guard, rev)
	waitValue(t, ns, "cm", "two")
}

// TestTwoGuardsOneObject: the second Guard that declares an object another
// Guard manages does not write it, and says so.
func TestTwoGuardsOneObject(t *testing.T) {
	t.Parallel()
	const ns = "shared"
	first := h.NewGuard(t, "shared-a", true, map[string]string{"ns.yaml": namespace(ns), "cm.yaml": configMap(ns, "cm", "from a")})
	h.WaitApplied(t, first.Guard, first.Initial)
	second := h.NewGuard(t, "shared-b", true, map[string]string{"cm.yaml": configMap(ns, "cm", "from b")})
	wait.Eventually(t, 30*time.Second, "second guard reports the conflict", func() error {
		g := h.Guard(t, second.Guard)
		c := meta.FindStatusCondition(g.Status.Conditions, v1alpha1.ConditionReady)
		if c == nil || c.Reason != v1alpha1.ReasonObjectConflict || !strings.Contains(c.Message, "guard shared-a") {
			return fmt.Errorf("ready = %+v", c)
		}
		return nil
	})
	cm, err := getConfigMap(t, ns, "cm")
	if err != nil || cm.Data["value"] != "from a" || cm.Labels[reconcile.GuardLabel] != first.Guard {
		t.Fatalf("the first guard's object was taken over: %v %v %v", err, cm.Data, cm.Labels)
	}
}

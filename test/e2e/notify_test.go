package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/driftguard/driftguard/api/v1alpha1"
	"github.com/driftguard/driftguard/notify"
	"github.com/driftguard/driftguard/test/wait"
)

const notifySecret = "driftguard-notify"

var notifications *notificationReceiver

// notificationReceiver is the HTTP endpoint the guard notifies.
type notificationReceiver struct {
	mu  sync.Mutex
	got []notify.Notification
}

func (r *notificationReceiver) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	var n notify.Notification
	b, _ := io.ReadAll(req.Body)
	if err := json.Unmarshal(b, &n); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	r.mu.Lock()
	r.got = append(r.got, n)
	r.mu.Unlock()
}

func (r *notificationReceiver) find(guard, kind string) []notify.Notification {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []notify.Notification
	for _, n := range r.got {
		if n.Guard == guard && n.Kind == kind {
			out = append(out, n)
		}
	}
	return out
}

// createNotifySecret stores the receiver's URL where the guard reads it.
func createNotifySecret(url string) error {
	ctx := context.Background()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "driftguard-system"}}
	if err := h.Admin.Create(ctx, ns); err != nil && !strings.Contains(err.Error(), "already exists") {
		return err
	}
	return h.Admin.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "driftguard-system", Name: notifySecret},
		StringData: map[string]string{"address": url}})
}

// TestNotifications: a failed sync and a drift reach the notification
// receiver, once each however often they repeat within the period.
func TestNotifications(t *testing.T) {
	t.Parallel()
	const ns = "notify"
	repo := h.NewGuard(t, "notify", true, map[string]string{"ns.yaml": namespace(ns), "cm.yaml": configMap(ns, "cm", "git")},
		func(s *v1alpha1.GuardSpec) { s.Enforcement = v1alpha1.EnforcementWarn })
	h.WaitApplied(t, repo.Guard, repo.Initial)
	for i := range 3 {
		if out, err := h.Kubectl(t, append([]string{"patch", "configmap", "cm", "-n", ns}, patchValue(fmt.Sprintf("edit %d", i))...)...); err != nil {
			t.Fatalf("patch: %s", out)
		}
		waitValue(t, ns, "cm", "git")
	}
	wait.Eventually(t, 20*time.Second, "drift notification", func() error {
		got := notifications.find(repo.Guard, notify.Drift)
		if len(got) != 1 {
			return fmt.Errorf("%d drift notifications", len(got))
		}
		if got[0].Object != "ConfigMap notify/cm" || got[0].Source == nil || got[0].Source.Path != "cm.yaml" || !strings.Contains(got[0].Summary, "alice") {
			return fmt.Errorf("notification %+v", got[0])
		}
		return nil
	})

	repo.Change(t, "break it", map[string]string{"cm.yaml": "kind: ConfigMap\nmetadata: [\n"})
	wait.Eventually(t, 30*time.Second, "sync-failed notification", func() error {
		got := notifications.find(repo.Guard, notify.SyncFailed)
		if len(got) == 0 {
			return fmt.Errorf("none yet")
		}
		if !strings.Contains(got[0].Summary, "cm.yaml") {
			return fmt.Errorf("the notification must name the file: %+v", got[0])
		}
		return nil
	})
}

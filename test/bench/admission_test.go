package bench

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/driftguard/driftguard/test/wait"
)

// saveWebhooks keeps copies of the webhook configurations the guard
// registered. The validating one exists when this runs; the mutating one is
// registered right after it, if the guard registers one at all.
func (e *env) saveWebhooks(ctx context.Context) error {
	adm := e.kube.AdmissionregistrationV1()
	vwc, err := adm.ValidatingWebhookConfigurations().Get(ctx, e.webhookName, metav1.GetOptions{})
	if err != nil {
		return err
	}
	e.vwc = vwc.DeepCopy()
	clearServerFields(&e.vwc.ObjectMeta)
	if err := wait.Until(5*time.Second, func() error {
		mwc, err := adm.MutatingWebhookConfigurations().Get(ctx, e.webhookName, metav1.GetOptions{})
		switch {
		case err == nil:
			e.mwc = mwc.DeepCopy()
			clearServerFields(&e.mwc.ObjectMeta)
		case !apierrors.IsNotFound(err):
			err = wait.Stop(err)
		}
		return err
	}); err != nil {
		return fmt.Errorf("mutating webhook configuration %s: %w", e.webhookName, err)
	}
	return nil
}

func clearServerFields(m *metav1.ObjectMeta) {
	m.ResourceVersion, m.UID, m.Generation = "", "", 0
	m.CreationTimestamp = metav1.Time{}
	m.ManagedFields = nil
}

// setAdmission makes the guard's validating and mutating webhook
// configurations present or absent, and waits until the API server acts on
// them: a patch by alice of the managed ConfigMap ns/probe is denied (by the
// mutating webhook, which decides updates), or admitted. The validating one
// gives no such signal; it was changed first and gets the same time plus
// half a second.
func (e *env) setAdmission(b *testing.B, on bool, alice kubernetes.Interface, ns, probe string) {
	b.Helper()
	ctx := context.Background()
	adm := e.kube.AdmissionregistrationV1()
	if !on {
		// Keep them as the guard has them now (its rules follow the kinds
		// of the Guards created since): re-created as they were, the guard
		// has nothing to update, and no update makes the API server set up
		// its webhook clients again in the middle of a measurement.
		if _, err := adm.ValidatingWebhookConfigurations().Get(ctx, e.vwc.Name, metav1.GetOptions{}); err == nil {
			if err := e.saveWebhooks(ctx); err != nil {
				b.Fatal(err)
			}
		}
	}
	ensure(b, on, func() error {
		_, err := adm.ValidatingWebhookConfigurations().Create(ctx, e.vwc, metav1.CreateOptions{})
		return err
	}, func() error {
		return adm.ValidatingWebhookConfigurations().Delete(ctx, e.vwc.Name, metav1.DeleteOptions{})
	})
	ensure(b, on, func() error {
		_, err := adm.MutatingWebhookConfigurations().Create(ctx, e.mwc, metav1.CreateOptions{})
		return err
	}, func() error {
		return adm.MutatingWebhookConfigurations().Delete(ctx, e.mwc.Name, metav1.DeleteOptions{})
	})
	i := 0
	if err := wait.Until(15*time.Second, func() error {
		i++
		_, err := patchValue(alice, ns, probe, fmt.Sprintf("probe-%d-%d", time.Now().UnixNano(), i))
		denied := apierrors.IsForbidden(err) && strings.Contains(err.Error(), "driftguard")
		if err != nil && !denied {
			b.Fatalf("probe patch of %s/%s: %v", ns, probe, err)
		}
		if denied != on {
			return fmt.Errorf("probe denied: %v", denied)
		}
		return nil
	}); err != nil {
		b.Fatalf("webhooks present=%v not in effect within 15s: %v", on, err)
	}
	time.Sleep(500 * time.Millisecond)
}

// ensure makes an object present (create) or absent (del), tolerating it
// already being so.
func ensure(b *testing.B, present bool, create, del func() error) {
	b.Helper()
	var err error
	if present {
		if err = create(); apierrors.IsAlreadyExists(err) {
			err = nil
		}
	} else if err = del(); apierrors.IsNotFound(err) {
		err = nil
	}
	if err != nil {
		b.Fatal(err)
	}
}

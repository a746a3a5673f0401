package webhook

import (
	"context"
	"fmt"
	"strings"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/driftguard/driftguard/audit"
	"github.com/driftguard/driftguard/drift"
)

// watch starts informers on the two webhook configurations, by name (the
// guard's RBAC lets it see no other). Admission webhooks are never called for
// webhook configurations, so this watch is what protects them: any event
// that leaves a configuration different from what the guard registered, or
// deletes it, makes the next Sync read and restore it.
func (r *Registrar) watch(ctx context.Context) error {
	r.mu.Lock()
	name := r.registration.Name
	r.mu.Unlock()
	factory := informers.NewSharedInformerFactoryWithOptions(r.Kube, 0, informers.WithTweakListOptions(func(o *metav1.ListOptions) {
		o.FieldSelector = fields.OneTermEqualSelector("metadata.name", name).String()
	}))
	for _, inf := range []cache.SharedIndexInformer{
		factory.Admissionregistration().V1().ValidatingWebhookConfigurations().Informer(),
		factory.Admissionregistration().V1().MutatingWebhookConfigurations().Informer(),
	} {
		if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
			AddFunc:    func(obj any) { r.observed(obj) },
			UpdateFunc: func(_, obj any) { r.observed(obj) },
			DeleteFunc: func(obj any) {
				r.deleted.Store(true)
				r.forced.Store(true)
				r.Changed()
			},
		}); err != nil {
			return fmt.Errorf("watch webhook configurations: %w", err)
		}
		if err := inf.SetWatchErrorHandlerWithContext(func(_ context.Context, _ *cache.Reflector, err error) {
			r.Log.Info("watch of the webhook configurations failed; retrying", "error", err.Error())
		}); err != nil {
			return fmt.Errorf("watch webhook configurations: %w", err)
		}
	}
	factory.Start(ctx.Done())
	go func() {
		<-ctx.Done()
		factory.Shutdown()
	}()
	return nil
}

// observed checks a configuration the watch saw against the last
// registration, and asks for a Sync when it differs.
func (r *Registrar) observed(obj any) {
	want := r.want.Load()
	if want == nil {
		return
	}
	var same bool
	switch live := obj.(type) {
	case *admissionregistrationv1.ValidatingWebhookConfiguration:
		same = apiequality.Semantic.DeepEqual(live.Webhooks, want.Configuration().Webhooks)
	case *admissionregistrationv1.MutatingWebhookConfiguration:
		same = apiequality.Semantic.DeepEqual(live.Webhooks, want.MutatingConfiguration().Webhooks)
	default:
		return
	}
	if !same {
		r.forced.Store(true)
		r.Changed()
	}
}

func webhooksOf(obj client.Object) ([]any, error) {
	u, err := toUnstructured(obj)
	if err != nil {
		return nil, err
	}
	hooks, _ := u.Object["webhooks"].([]any)
	return hooks, nil
}

// restored records a configuration the guard put back: who changed it, as far
// as its newest managed-fields entry tells, and which fields.
func (r *Registrar) restored(ctx context.Context, w written) {
	obj := audit.Object{Group: "admissionregistration.k8s.io", Version: "v1", Kind: kindOf(w.want), Name: w.want.GetName()}
	rec := audit.Record{Type: audit.Protection, Object: obj, Action: "restored"}
	if w.live == nil {
		rec.Operation = "DELETE"
		rec.Reason = "the webhook configuration was deleted; the guard created it again (Kubernetes does not tell a watcher who deletes an object: the API server's audit log does)"
	} else {
		rec.Operation = "UPDATE"
		rec.Manager, _ = NewestManager(w.live.GetManagedFields(), FieldManager)
		rec.User = rec.Manager
		rec.Fields = webhookChanges(w.want, w.live)
		rec.Reason = "the webhook configuration was changed; the guard put its registration back"
	}
	r.Log.Info("webhook configuration restored", "kind", obj.Kind, "name", obj.Name, "operation", rec.Operation, "manager", rec.Manager)
	if r.Audit != nil {
		r.Audit.Log(ctx, rec)
	}
}

// webhookChanges lists the fields of the webhooks that differ between what
// the guard registers and what it found, including fields someone added
// (matchConditions, say).
func webhookChanges(want, live client.Object) []audit.Field {
	w, err1 := webhooksOf(want)
	l, err2 := webhooksOf(live)
	if err1 != nil || err2 != nil {
		return nil
	}
	return audit.FieldsOf(drift.CompareBoth(map[string]any{"webhooks": w}, map[string]any{"webhooks": l}, drift.Options{}))
}

// NewestManager returns the field manager of the newest managed-fields entry
// other than self's, and its time: who last changed the object, as far as the
// object itself tells. "unknown" when no other manager wrote it.
func NewestManager(entries []metav1.ManagedFieldsEntry, self string) (string, time.Time) {
	best, at := "", time.Time{}
	for _, mf := range entries {
		if mf.Manager == self || mf.Time == nil || strings.EqualFold(mf.Subresource, "status") {
			continue
		}
		if best == "" || !mf.Time.Time.Before(at) {
			best, at = mf.Manager, mf.Time.Time
		}
	}
	if best == "" {
		return "unknown", time.Time{}
	}
	return best, at
}

package app

import (
	"context"
	"time"

	"github.com/go-logr/logr"
	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/driftguard/driftguard/api/v1alpha1"
	"github.com/driftguard/driftguard/audit"
	"github.com/driftguard/driftguard/drift"
	"github.com/driftguard/driftguard/gitstore"
	"github.com/driftguard/driftguard/webhook"
)

// newRegistrar builds the registrar of the webhook configurations: it reads
// and writes them straight on the API server (never through the manager's
// cache, which would list every configuration in the cluster), and, with
// --self-protect, watches them by name and restores them.
func newRegistrar(cfg *rest.Config, mgr manager.Manager, kube kubernetes.Interface, store *gitstore.Store, auditLog *audit.Logger, o Options, log logr.Logger) (*webhook.Registrar, error) {
	direct, err := client.New(cfg, client.Options{Scheme: mgr.GetScheme(), Mapper: mgr.GetRESTMapper()})
	if err != nil {
		return nil, err
	}
	r := &webhook.Registrar{
		Client: direct, Mapper: mgr.GetRESTMapper(), Kinds: store.Kinds, Log: log.WithName("webhook"),
		Kube: kube, Protect: o.SelfProtect, Audit: auditLog,
	}
	if o.DeploymentName != "" {
		r.Uninstalling = func(ctx context.Context) bool { return deploymentGone(ctx, kube, o.Namespace, o.DeploymentName) }
	}
	r.Init()
	store.Subscribe(r.Changed)
	return r, nil
}

// deploymentGone reports whether the guard's own Deployment is deleted or
// being deleted, or the guard may no longer read it (its Role went first):
// the guard is being uninstalled.
func deploymentGone(ctx context.Context, kube kubernetes.Interface, namespace, name string) bool {
	d, err := kube.AppsV1().Deployments(namespace).Get(ctx, name, metav1.GetOptions{})
	return apierrors.IsNotFound(err) || apierrors.IsForbidden(err) || (err == nil && d.DeletionTimestamp != nil)
}

// NeedLeaderElection is true: one record per change.
func (p *protectionWatch) NeedLeaderElection() bool { return true }

// protectionWatch records the changes someone else makes to the guard's own
// Deployment (--deployment-name) and to Guards: who (the newest managed-fields
// entry), what (the fields of the spec), when. It runs on the leader only, so
// that each change is recorded once.
type protectionWatch struct {
	kube       kubernetes.Interface
	cache      cache.Cache
	namespace  string
	deployment string
	// shard: only Guards of this shard (--shard) are recorded here; the
	// other shards record theirs.
	shard string
	audit *audit.Logger
	log   logr.Logger
}

// Start watches until ctx ends.
func (p *protectionWatch) Start(ctx context.Context) error {
	started := time.Now()
	guards, err := p.cache.GetInformer(ctx, &v1alpha1.Guard{})
	if err != nil {
		if ctx.Err() != nil {
			return nil // stopping while the cache synced
		}
		return err
	}
	reg, err := guards.AddEventHandler(p.handler(ctx, started, v1alpha1.GroupVersion.WithKind("Guard"), guardSpec))
	if err != nil {
		return err
	}
	defer func() { _ = guards.RemoveEventHandler(reg) }()
	if p.deployment != "" {
		factory := informers.NewSharedInformerFactoryWithOptions(p.kube, 0, informers.WithNamespace(p.namespace),
			informers.WithTweakListOptions(func(o *metav1.ListOptions) {
				o.FieldSelector = fields.OneTermEqualSelector("metadata.name", p.deployment).String()
			}))
		inf := factory.Apps().V1().Deployments().Informer()
		if _, err := inf.AddEventHandler(p.handler(ctx, started, appsv1.SchemeGroupVersion.WithKind("Deployment"), deploymentSpec)); err != nil {
			return err
		}
		factory.Start(ctx.Done())
		defer factory.Shutdown()
	}
	<-ctx.Done()
	return nil
}

func guardSpec(obj any) (any, bool) {
	g, ok := obj.(*v1alpha1.Guard)
	if !ok {
		return nil, false
	}
	return &g.Spec, true
}

func deploymentSpec(obj any) (any, bool) {
	d, ok := obj.(*appsv1.Deployment)
	if !ok {
		return nil, false
	}
	return &d.Spec, true
}

// handler records creations after start, spec changes (a new generation)
// and deletions.
func (p *protectionWatch) handler(ctx context.Context, started time.Time, gvk schema.GroupVersionKind, spec func(any) (any, bool)) toolscache.ResourceEventHandler {
	return toolscache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) {
			if o, ok := obj.(client.Object); ok && o.GetCreationTimestamp().After(started) {
				p.record(ctx, gvk, o, "CREATE", nil)
			}
		},
		UpdateFunc: func(oldObj, newObj any) {
			o, ok1 := oldObj.(client.Object)
			n, ok2 := newObj.(client.Object)
			if !ok1 || !ok2 || o.GetGeneration() == n.GetGeneration() {
				return // status, metadata: not a change of what the object asks for
			}
			before, _ := spec(oldObj)
			after, _ := spec(newObj)
			p.record(ctx, gvk, n, "UPDATE", specChanges(before, after))
		},
		DeleteFunc: func(obj any) {
			if t, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
				obj = t.Obj
			}
			if o, ok := obj.(client.Object); ok {
				p.record(ctx, gvk, o, "DELETE", nil)
			}
		},
	}
}

func (p *protectionWatch) record(ctx context.Context, gvk schema.GroupVersionKind, obj client.Object, op string, changes []audit.Field) {
	if gvk.Kind == "Guard" && obj.GetLabels()[v1alpha1.ShardLabel] != p.shard {
		return
	}
	rec := audit.Record{Type: audit.Protection, Operation: op, Action: "recorded", Fields: changes,
		Object: audit.Object{Group: gvk.Group, Version: gvk.Version, Kind: gvk.Kind, Namespace: obj.GetNamespace(), Name: obj.GetName()}}
	if op == "DELETE" {
		rec.Reason = "deleted (Kubernetes does not tell a watcher who deletes an object: the API server's audit log does)"
	} else {
		rec.Manager, _ = webhook.NewestManager(obj.GetManagedFields(), "")
		rec.User = rec.Manager
	}
	if gvk.Kind == "Guard" {
		rec.Guard = obj.GetName()
	}
	p.log.Info("change to the guard's own setup", "kind", gvk.Kind, "name", obj.GetName(), "operation", op, "manager", rec.Manager)
	p.audit.Log(ctx, rec)
}

// specChanges lists the fields of a spec that changed: Desired is the value
// before, Live the value after.
func specChanges(before, after any) []audit.Field {
	b, err1 := runtime.DefaultUnstructuredConverter.ToUnstructured(before)
	a, err2 := runtime.DefaultUnstructuredConverter.ToUnstructured(after)
	if err1 != nil || err2 != nil {
		return nil
	}
	return audit.FieldsOf(drift.CompareBoth(map[string]any{"spec": b}, map[string]any{"spec": a}, drift.Options{}))
}

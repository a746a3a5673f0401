package protect

import (
	"context"
	"errors"
	"time"

	"github.com/go-logr/logr"
	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/driftguard/driftguard/api/v1alpha1"
	"github.com/driftguard/driftguard/audit"
	"github.com/driftguard/driftguard/drift"
	"github.com/driftguard/driftguard/webhook"
)

// Recorder records the changes someone else makes to the guard's own
// Deployment (--deployment-name) and to Guards: who (the newest managed-fields
// entry), what (the fields of the spec), when. It runs on the leader only, so
// that each change is recorded once. Make it with NewRecorder.
type Recorder struct {
	o RecorderOptions
}

// RecorderOptions configure a Recorder. Cache and Audit are required; Kube
// too when Deployment is set.
type RecorderOptions struct {
	Kube  kubernetes.Interface
	Cache cache.Cache
	// Namespace and Deployment name the guard's own Deployment; without
	// Deployment only Guards are recorded.
	Namespace  string
	Deployment string
	// Shard: only Guards of this shard (--shard) are recorded here; the
	// other shards record theirs.
	Shard string
	Audit *audit.Logger
	Log   logr.Logger
}

// NewRecorder returns a Recorder ready to start, or an error naming the
// required option that is missing.
func NewRecorder(o RecorderOptions) (*Recorder, error) {
	switch {
	case o.Cache == nil:
		return nil, errors.New("protection recorder: no Cache")
	case o.Audit == nil:
		return nil, errors.New("protection recorder: no Audit logger")
	case o.Deployment != "" && o.Kube == nil:
		return nil, errors.New("protection recorder: a Deployment without a Kube client")
	}
	return &Recorder{o: o}, nil
}

// NeedLeaderElection is true: one record per change.
func (p *Recorder) NeedLeaderElection() bool { return true }

// Start watches until ctx ends.
func (p *Recorder) Start(ctx context.Context) error {
	started := time.Now()
	guards, err := p.o.Cache.GetInformer(ctx, &v1alpha1.Guard{})
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
	if p.o.Deployment != "" {
		factory := informers.NewSharedInformerFactoryWithOptions(p.o.Kube, 0, informers.WithNamespace(p.o.Namespace),
			informers.WithTweakListOptions(func(o *metav1.ListOptions) {
				o.FieldSelector = fields.OneTermEqualSelector("metadata.name", p.o.Deployment).String()
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
func (p *Recorder) handler(ctx context.Context, started time.Time, gvk schema.GroupVersionKind, spec func(any) (any, bool)) toolscache.ResourceEventHandler {
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

func (p *Recorder) record(ctx context.Context, gvk schema.GroupVersionKind, obj client.Object, op string, changes []audit.Field) {
	if gvk.Kind == "Guard" && obj.GetLabels()[v1alpha1.ShardLabel] != p.o.Shard {
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
	p.o.Log.Info("change to the guard's own setup", "kind", gvk.Kind, "name", obj.GetName(), "operation", op, "manager", rec.Manager)
	p.o.Audit.Log(ctx, rec)
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

package apply

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"sync"
	"sync/atomic"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	utilnet "k8s.io/apimachinery/pkg/util/net"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/driftguard/driftguard/api/v1alpha1"
	"github.com/driftguard/driftguard/drift"
	"github.com/driftguard/driftguard/drift/schemas"
	"github.com/driftguard/driftguard/render"
)

// Action is what an apply did to one object.
type Action string

// Actions of a change set entry.
const (
	Created    Action = "created"
	Configured Action = "configured"
	Unchanged  Action = "unchanged"
	Deleted    Action = "deleted"
	Failed     Action = "failed"
	// Replaced: deleted and created again, because an update was refused
	// for an immutable field and force was on.
	Replaced Action = "replaced"
)

// Options tune one Apply.
type Options struct {
	// Force recreates objects whose update is refused for an immutable
	// field (every object; an object's driftguard.io/force annotation in Git
	// does the same for that object alone).
	Force bool
}

// Entry is the outcome for one object.
type Entry struct {
	Object *render.Object
	Action Action
	// UID is the object's UID as the API server answered the apply, or, for
	// an object left Unchanged, as the informer cache has it (only when it
	// is provably what the guard applied: AppliedBy). Empty when failed.
	UID types.UID
	Err error
}

// ChangeSet is the outcome of one apply, in apply order.
type ChangeSet []Entry

// Count returns how many entries have the action.
func (cs ChangeSet) Count(a Action) int {
	n := 0
	for _, e := range cs {
		if e.Action == a {
			n++
		}
	}
	return n
}

// LiveLookup returns the cached live state of an object. known is false when
// the cache does not watch that kind (yet), and the caller must ask the API server.
type LiveLookup interface {
	Live(gvk schema.GroupVersionKind, namespace, name string) (obj *unstructured.Unstructured, known bool)
}

// LiveCache is a LiveLookup that also tells a cached object's
// resourceVersion without decoding it (false when it is not cached or its
// kind not watched), so that an apply can trust an earlier comparison.
type LiveCache interface {
	LiveLookup
	LiveVersion(gvk schema.GroupVersionKind, namespace, name string) (string, bool)
}

// Applier writes desired objects with server-side apply.
type Applier struct {
	Client client.Client
	// Reader, when set, serves Prune's lists straight from the API server
	// (mgr.GetAPIReader()): a cached client would keep a metadata informer of
	// every managed kind, a second copy of what the drift informers hold.
	Reader client.Reader
	// Live, when set, lets Apply skip objects already in sync without an API call.
	Live LiveCache
	// Rules, when set, returns a guard's ignore rules: ignored fields are
	// neither compared nor taken back from their owner on apply.
	Rules func(guard string) []*drift.Rule
	// Applied, when set, is told every object the API server stored for
	// an apply (not a dry run), as it returned it (HealthTracker.Applied).
	Applied func(stored *unstructured.Unstructured)
	// Concurrency is how many objects of a stage Apply applies at once
	// (DefaultConcurrency when 0 or less).
	Concurrency int
	// Identities, when set, decide whom each Guard's writes act as
	// (ForGuard); unset, every write is the guard's own.
	Identities *Identities
	// Schemas gives each kind's structure as the API server serves it, for
	// the comparison's list semantics; nil uses client-go's built-in ones.
	Schemas *schemas.Cache

	identity Identity // whom Client acts as (As)
}

// Apply applies objects in stages: CustomResourceDefinitions and Namespaces
// first, then (once the definitions it created or changed are established)
// the rest. Within a stage up to Concurrency objects are applied at once;
// the change set keeps the order of objs. Objects already in sync are left
// alone. An object that fails does not stop the others; the joined error
// names each one. When the API server cannot be reached, no further object
// is attempted.
func (a *Applier) Apply(ctx context.Context, objs []*render.Object, opts Options) (ChangeSet, error) {
	return a.ApplyEach(ctx, objs, opts, nil)
}

// ApplyEach is Apply that also calls each (when not nil) with every entry as
// soon as its object has been applied, from the goroutine that applied it:
// a caller that records each entry there loses at most the entries in flight
// when the process dies, not those of the whole apply.
func (a *Applier) ApplyEach(ctx context.Context, objs []*render.Object, opts Options, each func(Entry)) (ChangeSet, error) {
	first, rest := stage(objs)
	cs := make(ChangeSet, 0, len(objs))
	var errs []error
	for _, group := range [][]*render.Object{first, rest} {
		entries, cutOff := a.applyStage(ctx, group, opts, each)
		var crds []*render.Object
		for _, e := range entries {
			cs = append(cs, e)
			if e.Err != nil {
				errs = append(errs, e.Err)
			}
			if e.Action != Unchanged && e.Action != Failed && e.Object.Key.Kind == "CustomResourceDefinition" {
				crds = append(crds, e.Object)
			}
		}
		if cutOff {
			// Every further object would fail the same way, each with an
			// error record: stop; the retry applies them.
			left := len(objs) - len(cs)
			return cs, errors.Join(append(errs, fmt.Errorf("%d objects not attempted: the API server cannot be reached", left))...)
		}
		if len(errs) > 0 {
			// Without its namespaces and definitions the rest would only fail.
			break
		}
		if err := a.waitEstablished(ctx, crds); err != nil {
			errs = append(errs, err)
			break
		}
	}
	return cs, errors.Join(errs...)
}

// DefaultConcurrency is the Applier's Concurrency when it sets none.
const DefaultConcurrency = 16

// applyStage applies objs, up to Concurrency at once, and returns the
// entries of the objects it attempted, in the order of objs. cutOff is true
// when an object failed because the API server could not be reached: no
// object is handed out after that, and objects in flight that fail the same
// way count as not attempted.
func (a *Applier) applyStage(ctx context.Context, objs []*render.Object, opts Options, each func(Entry)) (entries []Entry, cutOff bool) {
	workers := a.Concurrency
	if workers <= 0 {
		workers = DefaultConcurrency
	}
	all := make([]Entry, len(objs))
	attempted := make([]bool, len(objs))
	var unreachableSeen atomic.Bool
	next := make(chan int)
	var wg sync.WaitGroup
	for range min(workers, len(objs)) {
		wg.Go(func() {
			for i := range next {
				o := objs[i]
				action, uid, err := a.applyOne(ctx, o, opts)
				if err != nil {
					// The first object to find the API server unreachable
					// stands for all: the others in flight then are left
					// as not attempted, not one error record each.
					if Unreachable(err) && !unreachableSeen.CompareAndSwap(false, true) {
						continue
					}
					err = fmt.Errorf("apply %s (%s:%d): %w", o.Key, o.Source.Path, o.Source.Line, err)
					action = Failed
				}
				all[i], attempted[i] = Entry{Object: o, Action: action, UID: uid, Err: err}, true
				if each != nil {
					each(all[i])
				}
			}
		})
	}
	for i := range objs {
		if unreachableSeen.Load() {
			break
		}
		next <- i
	}
	close(next)
	wg.Wait()
	for i, ok := range attempted {
		if ok {
			entries = append(entries, all[i])
		}
	}
	return entries, unreachableSeen.Load()
}

// applyOne applies one object unless the informer cache shows it equal to
// Git and applied by the guard. An object equal to Git that the guard did
// not provably apply (created by someone else, adopted) is applied once, so
// that the guard owns it and learns its UID from its own apply's answer.
func (a *Applier) applyOne(ctx context.Context, o *render.Object, opts Options) (Action, types.UID, error) {
	gvk := o.GVK()
	var live *unstructured.Unstructured
	if a.Live != nil {
		if uid, ok := a.knownInSync(o); ok {
			return Unchanged, uid, nil
		}
		var known bool
		if live, known = a.Live.Live(gvk, o.Key.Namespace, o.Key.Name); known && live != nil {
			if uid, ok := a.compareKept(o, live); ok {
				return Unchanged, uid, nil
			}
		}
	}
	action, stored, err := a.write(ctx, o, live, false)
	if err != nil && isImmutable(err) && (opts.Force || o.Obj().GetAnnotations()[v1alpha1.ForceAnnotation] == "true") {
		return a.replace(ctx, o)
	}
	if err != nil {
		return action, "", err
	}
	return action, stored.GetUID(), nil
}

// Revert forces the desired state back onto the live object, taking over any
// field another manager changed, and recreates the object when it is gone
// (live nil). Fields ignore rules hide stay with their owner. What the API
// server returns is kept as the object's server values.
func (a *Applier) Revert(ctx context.Context, want *render.Object, live *unstructured.Unstructured) (Action, error) {
	action, _, err := a.write(ctx, want, live, false)
	return action, err
}

// DryRun asks the API server what applying want over live would store
// (a server-side dry run) and keeps the answer as want's server values, so
// defaults, normalized values, pruned fields and mutating webhooks are not
// mistaken for drift.
func (a *Applier) DryRun(ctx context.Context, want *render.Object, live *unstructured.Unstructured) error {
	_, _, err := a.write(ctx, want, live, true)
	return err
}

// write applies want (or dry-runs it) and returns what the API server
// stored.
func (a *Applier) write(ctx context.Context, want *render.Object, live *unstructured.Unstructured, dryRun bool) (Action, *unstructured.Unstructured, error) {
	var liveObj map[string]any
	if live != nil {
		liveObj = live.Object
	}
	opts := a.Options(want.Obj(), liveObj)
	sent := want.Obj().Object
	if live != nil {
		sent = drift.WithoutIgnored(sent, opts)
	}
	u := (&unstructured.Unstructured{Object: sent}).DeepCopy()
	uidLabels := needsControllerUID(u)
	if uidLabels && live != nil {
		withControllerUID(u, live.GetUID())
	}
	applyOpts := []client.ApplyOption{client.FieldOwner(FieldManager), client.ForceOwnership}
	if dryRun {
		applyOpts = append(applyOpts, client.DryRunAll)
	}
	if err := a.Client.Apply(ctx, client.ApplyConfigurationFromUnstructured(u), applyOpts...); err != nil {
		return Failed, nil, a.ExplainForbidden(err, "patch (server-side apply)", want.GVK(), want.Key.Namespace)
	}
	action := Configured
	if createdJustNow(u) {
		action = Created
	}
	if uidLabels && !dryRun && !hasControllerUID(u) {
		// Created now (or again since the cache saw it): the UID is
		// known only from the answer.
		again := (&unstructured.Unstructured{Object: sent}).DeepCopy()
		withControllerUID(again, u.GetUID())
		if err := a.Client.Apply(ctx, client.ApplyConfigurationFromUnstructured(again), applyOpts...); err != nil {
			return Failed, nil, fmt.Errorf("label the Job with its controller-uid: %w", a.ExplainForbidden(err, "patch (server-side apply)", want.GVK(), want.Key.Namespace))
		}
		u = again
	}
	want.SetServerValues(drift.ServerValuesOf(sent, u.Object, opts))
	if !dryRun {
		a.keepAnswer(want, u)
		if a.Applied != nil {
			a.Applied(u)
		}
	}
	return action, u, nil
}

// createdJustNow tells a create from an update by the managed fields: right
// after a create, our Apply entry is the only one and is as old as the object.
func createdJustNow(u *unstructured.Unstructured) bool {
	mf := u.GetManagedFields()
	if len(mf) != 1 || mf[0].Manager != FieldManager || mf[0].Time == nil {
		return false
	}
	created := u.GetCreationTimestamp()
	return mf[0].Time.Equal(&created)
}

// ClearAnnotations removes annotations from a live object with a merge patch.
func (a *Applier) ClearAnnotations(ctx context.Context, live *unstructured.Unstructured, keys ...string) error {
	ann := make(map[string]any, len(keys))
	for _, k := range keys {
		ann[k] = nil
	}
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": ann}})
	if err != nil {
		return err
	}
	obj := &unstructured.Unstructured{}
	obj.SetGroupVersionKind(live.GroupVersionKind())
	obj.SetNamespace(live.GetNamespace())
	obj.SetName(live.GetName())
	if err := a.Client.Patch(ctx, obj, client.RawPatch(types.MergePatchType, patch), client.FieldOwner(FieldManager)); err != nil && !IsNotFoundOrGone(err) {
		return fmt.Errorf("clear annotations of %s/%s: %w", live.GetNamespace(), live.GetName(), a.ExplainForbidden(err, "patch", live.GroupVersionKind(), live.GetNamespace()))
	}
	return nil
}

// stage splits objects into definitions that others depend on, and the rest.
func stage(objs []*render.Object) (first, rest []*render.Object) {
	for _, o := range objs {
		switch o.Key.Group + "/" + o.Key.Kind {
		case "/Namespace", "apiextensions.k8s.io/CustomResourceDefinition":
			first = append(first, o)
		default:
			rest = append(rest, o)
		}
	}
	sort.SliceStable(first, func(i, j int) bool { return first[i].Key.Kind < first[j].Key.Kind })
	return first, rest
}

// Unreachable reports errors that say the API server cannot be reached, as
// opposed to refusing one object.
func Unreachable(err error) bool {
	return utilnet.IsConnectionRefused(err) || utilnet.IsConnectionReset(err) || utilnet.IsProbableEOF(err) ||
		utilnet.IsHTTP2ConnectionLost(err) || apierrors.IsServiceUnavailable(err)
}

// IsNotFoundOrGone reports errors that mean the object or its kind is absent.
func IsNotFoundOrGone(err error) bool {
	return apierrors.IsNotFound(err) || apierrors.IsGone(err) || meta.IsNoMatchError(err)
}

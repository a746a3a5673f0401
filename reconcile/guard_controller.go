package reconcile

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	"github.com/driftguard/driftguard/api/v1alpha1"
	"github.com/driftguard/driftguard/apply"
	"github.com/driftguard/driftguard/audit"
	"github.com/driftguard/driftguard/health"
	"github.com/driftguard/driftguard/redact"
	"github.com/driftguard/driftguard/render"
	"github.com/driftguard/driftguard/source"
)

// Fetcher is the part of source.GitFetcher the reconciler uses.
type Fetcher interface {
	Fetch(ctx context.Context, req source.Request) (string, *render.Snapshot, error)
	Files(req source.Request, revision, dir string, match func(name string) bool) (map[string]string, error)
}

// DriftState is what the drift watcher knows: how many objects of a guard
// differ from Git, and which differences the policy accepted.
type DriftState interface {
	Drifted(guard string, limit int) (int, []render.ObjectKey)
	Accepted(gvk schema.GroupVersionKind, namespace, name string) bool
	// Fights lists objects the watcher stopped reverting because another
	// field manager changes them back every time.
	Fights(guard string) []string
}

// GuardReconciler keeps the cluster equal to the Git source of each Guard:
// fetch, render, publish the snapshot, apply, prune, report.
type GuardReconciler struct {
	Client  client.Client
	Fetcher Fetcher
	Store   *render.Store
	Applier *apply.Applier
	// Inventory keeps what each Guard applied, the only objects prune may
	// delete. Unset, SetupWithManager keeps it in SecretNamespace (the
	// guard's own namespace), without the UIDs of self-heal's applies
	// between reconciles unless apply.Applier.Applied hands them on.
	Inventory *InventoryStore
	Audit     *audit.Logger
	Drift     DriftState
	// SecretNamespace is where spec.git.secretRef is looked up when it names no namespace.
	SecretNamespace string
	// DefaultInterval applies when a Guard sets none.
	DefaultInterval time.Duration
	// Protect, when set, is called after a snapshot is published and before
	// it is applied: it brings the admission webhook's rules up to the kinds
	// in Git, so objects are guarded from the moment they exist.
	Protect func(ctx context.Context) error
	Log     logr.Logger

	// Health sums up the health of a Guard's objects (nil: not assessed).
	Health *HealthTracker
	// Events, when set, records Kubernetes Events on Guards.
	Events events.EventRecorder
	// Concurrent is how many Guards are reconciled at once (default 4).
	Concurrent int
	// Capabilities are the cluster's, for Helm charts (.Capabilities);
	// nil renders charts with Helm's defaults.
	Capabilities *ClusterCapabilities
	// Policy, when set, takes the admission policy from a path in one
	// Guard's repository, at the revision that Guard has in force.
	Policy *PolicySource
	// Shard, when set, limits the reconciler to Guards labelled
	// driftguard.io/shard=Shard; unset, to Guards without that label.
	Shard string
	// Writes, when set (shared with DriftStatus.Writes), remembers each
	// status write, so that DriftStatus does not write the same status
	// again when the watch reports what a reconcile applied.
	Writes *StatusWrites

	mu        sync.Mutex
	decorated map[string]*prepared // guard -> its fetched snapshot, decorated and ordered
	waits     map[string]waitStart
	dryRuns   map[string]*dryRunVerdicts // guard -> what dry runs told of its revision
	kicks     kicks
	queued    queuedTimes
}

// Pushed reconciles at once every Guard whose repository is one of urls (a
// push notification), instead of at its next interval.
func (r *GuardReconciler) Pushed(ctx context.Context, urls []string) {
	// Before any of them is reconciled: no Guard may resolve its ref with
	// a listing made before the push.
	if f, ok := r.Fetcher.(listingForgetter); ok {
		f.ForgetListings(urls)
	}
	var guards v1alpha1.GuardList
	if err := r.Client.List(ctx, &guards); err != nil {
		r.Log.Error(err, "list guards for a push")
		return
	}
	for i := range guards.Items {
		g := &guards.Items[i]
		if !r.InShard(g) {
			continue
		}
		for _, u := range urls {
			if source.SameRepository(SourceURL(g), u) {
				r.Enqueue(g.Name)
				break
			}
		}
	}
}

// SetupWithManager registers the reconciler.
func (r *GuardReconciler) SetupWithManager(mgr ctrl.Manager) error {
	if r.Inventory == nil {
		r.Inventory = &InventoryStore{Client: r.Client, Reader: mgr.GetAPIReader(), Namespace: r.SecretNamespace, Log: r.Log.WithName("inventory")}
	}
	// Run when this replica leads (after the follower stops).
	if err := mgr.Add(manager.RunnableFunc(r.forgetGone)); err != nil {
		return err
	}
	concurrent := r.Concurrent
	if concurrent <= 0 {
		concurrent = 4
	}
	return ctrl.NewControllerManagedBy(mgr).
		// Status patches (drift counts, conditions) must not start a full
		// reconcile; spec changes, sync requests (an annotation), pushes and
		// the interval do.
		For(&v1alpha1.Guard{}, builder.WithPredicates(
			predicate.Or(predicate.GenerationChangedPredicate{}, predicate.AnnotationChangedPredicate{}),
			predicate.NewPredicateFuncs(r.InShard),
			// Last: when a Guard that passed the others is queued.
			predicate.NewPredicateFuncs(r.queued.noteObject))).
		WatchesRawSource(r.kicks.source()).
		// A Guard that becomes Ready and Healthy wakes the Guards that wait
		// for it (spec.dependsOn), rather than their next check.
		Watches(&v1alpha1.Guard{}, handler.EnqueueRequestsFromMapFunc(r.dependents),
			builder.WithPredicates(predicate.Funcs{
				CreateFunc:  func(event.CreateEvent) bool { return false },
				DeleteFunc:  func(event.DeleteEvent) bool { return false },
				GenericFunc: func(event.GenericEvent) bool { return false },
				UpdateFunc:  func(e event.UpdateEvent) bool { return becameReady(e.ObjectOld, e.ObjectNew) },
			})).
		WithOptions(controller.Options{MaxConcurrentReconciles: concurrent}).
		Complete(r)
}

// becameReady: a Guard's own readiness for its dependents changed to ready.
func becameReady(oldObj, newObj client.Object) bool {
	o, ok1 := oldObj.(*v1alpha1.Guard)
	n, ok2 := newObj.(*v1alpha1.Guard)
	return ok1 && ok2 && notReadyMessage(o) != "" && notReadyMessage(n) == ""
}

// dependents lists the Guards whose spec.dependsOn names the Guard.
func (r *GuardReconciler) dependents(ctx context.Context, o client.Object) []ctrl.Request {
	var guards v1alpha1.GuardList
	if err := r.Client.List(ctx, &guards); err != nil {
		return nil
	}
	var out []ctrl.Request
	for i := range guards.Items {
		if slices.Contains(guards.Items[i].Spec.DependsOn, o.GetName()) && r.InShard(&guards.Items[i]) {
			out = append(out, ctrl.Request{NamespacedName: types.NamespacedName{Name: guards.Items[i].Name}})
		}
	}
	return out
}

// InShard reports whether this reconciler owns a Guard: its shard label
// equals Shard (both empty for the unsharded process).
func (r *GuardReconciler) InShard(o client.Object) bool { return inShard(o, r.Shard) }

// inShard reports whether o is of shard (its shard label's value; "" for
// none).
func inShard(o client.Object, shard string) bool { return o.GetLabels()[v1alpha1.ShardLabel] == shard }

// Reconcile runs one full reconciliation of a Guard.
func (r *GuardReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	log := r.Log.WithValues("guard", req.Name)
	defer r.Writes.reconciling(req.Name)()
	var g v1alpha1.Guard
	if err := r.Client.Get(ctx, req.NamespacedName, &g); err != nil {
		if apierrors.IsNotFound(err) {
			r.forget(req.Name)
			return ctrl.Result{}, nil
		}
		return ctrl.Result{}, err
	}
	if !g.DeletionTimestamp.IsZero() || !r.InShard(&g) {
		r.forget(g.Name)
		return ctrl.Result{}, nil
	}
	start := time.Now()
	before := g.Status.DeepCopy()
	res, err := r.reconcile(ctx, log, &g, r.queued.take(g.Name))
	g.Status.ObservedGeneration = g.Generation
	handledReconcileRequest(&g)
	if r.Drift != nil {
		g.Status.DriftedObjects, g.Status.Drifted = drifted(r.Drift, g.Name)
		setDegraded(&g.Status, r.Drift.Fights(g.Name))
		r.setSync(&g)
	}
	if r.Audit != nil {
		setAuditCondition(&g.Status, r.Audit.SinkErrors())
	}
	if perr := r.patchStatus(ctx, &g, before); perr != nil {
		err = errors.Join(err, perr)
	}
	observeGuard(&g, time.Since(start), outcome(&g))
	return res, err
}

// HealthChanged records an Event and an audit record when a Guard's health
// state changed; it is the HealthTracker's OnChange.
func (r *GuardReconciler) HealthChanged(g *v1alpha1.Guard, sum HealthSummary, prev health.State) {
	typ := corev1.EventTypeNormal
	if sum.State == health.Degraded || sum.State == health.Missing {
		typ = corev1.EventTypeWarning
	}
	msg := fmt.Sprintf("health %s (was %s)", sum.State, prev)
	if len(sum.Unhealthy) > 0 {
		msg += ": " + strings.Join(sum.Unhealthy, "; ")
	}
	r.event(g, typ, "Health"+string(sum.State), msg)
	r.record(context.Background(), audit.Record{Type: audit.Health, Guard: g.Name, Action: string(sum.State), Reason: msg,
		Source: &audit.Source{URL: SourceURL(g), Revision: g.Status.LastAppliedRevision}})
}

// forget drops a deleted Guard's desired state: its objects stay in the
// cluster, unguarded.
func (r *GuardReconciler) forget(guard string) {
	if r.Health != nil {
		snap, _ := r.Store.Snapshot(guard)
		r.Health.Forget(guard, snap)
	}
	r.Store.Remove(guard)
	r.Writes.forget(guard)
	r.queued.take(guard)
	if r.Inventory != nil {
		r.Inventory.Forget(guard)
	}
	forgetGuardMetrics(guard)
	r.mu.Lock()
	delete(r.decorated, guard)
	delete(r.waits, guard)
	delete(r.dryRuns, guard)
	r.mu.Unlock()
}

// forgetGone forgets, once, the Guards the store holds (what a follower
// published or reserved before this replica was elected) that are gone,
// being deleted or of another shard now: one deleted between the
// follower's last look and the election is never reconciled here, and
// would keep its objects from every other Guard, and its Git deciding
// them at admission, until the process restarts.
func (r *GuardReconciler) forgetGone(ctx context.Context) error {
	// The store's Guards first: one published after the list is not
	// taken for gone.
	held := r.Store.Guards()
	var guards v1alpha1.GuardList
	if err := r.Client.List(ctx, &guards); err != nil {
		// Not the manager's end: the next reconcile of each Guard, or a
		// restart, does the same.
		r.Log.Error(err, "list guards to forget those gone before this replica led")
		return nil
	}
	live := map[string]bool{}
	for i := range guards.Items {
		if g := &guards.Items[i]; g.DeletionTimestamp.IsZero() && r.InShard(g) {
			live[g.Name] = true
		}
	}
	for _, name := range held {
		if !live[name] {
			r.Log.Info("forgetting a Guard gone before this replica led", "guard", name)
			r.forget(name)
		}
	}
	return nil
}

func (r *GuardReconciler) interval(g *v1alpha1.Guard) time.Duration {
	if g.Spec.Interval.Duration > 0 {
		return g.Spec.Interval.Duration
	}
	if r.DefaultInterval > 0 {
		return r.DefaultInterval
	}
	return time.Minute
}

// attempt is one full reconciliation of a Guard: what its steps share.
type attempt struct {
	g      *v1alpha1.Guard
	log    logr.Logger
	gate   Gate           // the sync windows now
	req    source.Request // what the source is
	rev    string         // the revision to apply
	snap   *render.Snapshot
	manual bool       // a person asked for this sync
	inv    *Inventory // what the guard applied: the only objects prune deletes
	// applier writes as the Guard's identity (spec.serviceAccountName,
	// --default-service-account, or the guard's own).
	applier engine
	plan    *SyncPlan // the revision's waves and hooks
	// install: the Guard's first sync (no revision applied yet) runs
	// Helm's install hooks, every later one its upgrade hooks.
	install bool
	// queued is when an event or a kick queued this reconcile (zero for
	// the interval, a retry): a ref listing begun since will do.
	queued time.Time
}

// stop ends a reconcile with a result; nil goes on to the next step.
type stop = *ctrl.Result

func stopAfter(d time.Duration) stop { return &ctrl.Result{RequeueAfter: d} }

// reconcile runs the steps of a full reconciliation in order; each may stop
// it with the condition it set. docs/reconciliation.md describes them.
func (r *GuardReconciler) reconcile(ctx context.Context, log logr.Logger, g *v1alpha1.Guard, queued time.Time) (ctrl.Result, error) {
	a := &attempt{g: g, log: log, queued: queued}
	if s := r.checkSpec(a); s != nil {
		return *s, nil
	}
	if s := r.checkDependencies(ctx, a); s != nil {
		return *s, nil
	}
	if s := r.checkIdentity(ctx, a); s != nil {
		return *s, nil
	}
	ctx, cancel := context.WithTimeout(ctx, r.timeout(g))
	defer cancel()
	if s := r.fetchSource(ctx, a); s != nil {
		return *s, nil
	}
	if s := r.chooseRevision(ctx, a); s != nil {
		return *s, nil
	}
	if s := r.prepare(ctx, a); s != nil {
		return *s, nil
	}
	if err := reserveHoldings(ctx, r.Store, r.Inventory, r.Shard, func() ([]v1alpha1.Guard, error) {
		var guards v1alpha1.GuardList
		err := r.Client.List(ctx, &guards)
		return guards.Items, err
	}); err != nil {
		// No Guard publishes before every Guard claimed what it applied.
		return *r.failed(ctx, g, v1alpha1.ReasonInventoryFailed, "read the Guards' inventories, which say which Guard keeps an object two Guards declare: "+err.Error()), nil
	}
	r.publish(ctx, a)
	return r.applyAndPrune(ctx, a), nil
}

// checkSpec: a spec that cannot work is Stalled until it changes; a
// suspended Guard is left alone.
func (r *GuardReconciler) checkSpec(a *attempt) stop {
	g := a.g
	if len(g.Name) > 63 {
		r.stalled(g, v1alpha1.ReasonInvalidName, fmt.Sprintf("guard name %q is longer than 63 characters and cannot be a label value", g.Name))
		return &ctrl.Result{}
	}
	if _, err := CompileIgnoreRules(g.Spec.Ignore); err != nil {
		r.stalled(g, v1alpha1.ReasonInvalidIgnoreRule, fmt.Sprintf("guard %s: spec.%v", g.Name, err))
		return &ctrl.Result{}
	}
	gate, err := EvaluateWindows(g.Spec.SyncWindows, time.Now())
	if err != nil {
		r.stalled(g, v1alpha1.ReasonInvalidSyncWindow, err.Error())
		return &ctrl.Result{}
	}
	a.gate = gate
	if g.Spec.Suspend {
		meta.RemoveStatusCondition(&g.Status.Conditions, v1alpha1.ConditionReconciling)
		meta.SetStatusCondition(&g.Status.Conditions, metav1.Condition{Type: v1alpha1.ConditionSuspended, Status: metav1.ConditionTrue, Reason: v1alpha1.ReasonSuspended,
			Message: fmt.Sprintf("spec.suspend is true: not reconciled and drift not reverted; %s stays in force (driftguard resume guard %s)", orNone(short(g.Status.LastAppliedRevision)), g.Name)})
		a.log.V(1).Info("suspended")
		return &ctrl.Result{}
	}
	meta.RemoveStatusCondition(&g.Status.Conditions, v1alpha1.ConditionSuspended)
	return nil
}

// handledReconcileRequest records the reconcile request
// (driftguard.io/reconcile-requested) the reconcile just ran for as
// handled. A suspended Guard handles none: the request waits for resume.
func handledReconcileRequest(g *v1alpha1.Guard) {
	if req := g.Annotations[v1alpha1.ReconcileRequestedAnnotation]; req != "" && !g.Spec.Suspend {
		g.Status.LastHandledReconcileAt = req
	}
}

// checkDependencies waits for the Guards of spec.dependsOn.
func (r *GuardReconciler) checkDependencies(ctx context.Context, a *attempt) stop {
	waiting, err := dependenciesReady(ctx, r.Client, a.g)
	var cycle *errDependencyCycle
	switch {
	case errors.As(err, &cycle):
		r.stalled(a.g, v1alpha1.ReasonDependencyCycle, err.Error())
		// Another Guard's spec may break the cycle: look again.
		return stopAfter(dependencyRequeue)
	case err != nil:
		r.notReady(a.g, v1alpha1.ReasonDependencyNotReady, err.Error())
		return stopAfter(dependencyRequeue)
	case waiting != "":
		r.notReady(a.g, v1alpha1.ReasonDependencyNotReady, waiting)
		return stopAfter(dependencyRequeue)
	}
	return nil
}

// checkIdentity finds whom the Guard's writes act as. A service account
// that does not exist (or is the guard's own) leaves the Guard not Ready,
// naming it, and is looked for again: creating it is the fix.
func (r *GuardReconciler) checkIdentity(ctx context.Context, a *attempt) stop {
	a.applier = engine{r.Applier}
	if r.Applier.Identities == nil {
		return nil
	}
	id, err := r.Applier.Identities.For(ctx, a.g)
	if err != nil {
		reason := v1alpha1.ReasonServiceAccountNotFound
		var ie *apply.IdentityError
		if errors.As(err, &ie) {
			reason = ie.Reason
		}
		msg := err.Error()
		if !notReadyFor(a.g, reason, msg) {
			r.event(a.g, corev1.EventTypeWarning, reason, msg)
			r.record(ctx, audit.Record{Type: audit.Error, Guard: a.g.Name, Operation: "SYNC", Reason: reason, Error: msg})
		}
		r.notReady(a.g, reason, msg)
		return stopAfter(min(r.interval(a.g), identityRequeue))
	}
	a.applier = engine{r.Applier.As(id)}
	return nil
}

// notReadyFor reports whether the Guard is not Ready already for reason and
// msg (an Event and a record were made then).
func notReadyFor(g *v1alpha1.Guard, reason, msg string) bool {
	c := meta.FindStatusCondition(g.Status.Conditions, v1alpha1.ConditionReady)
	return c != nil && c.Status == metav1.ConditionFalse && c.Reason == reason && c.Message == msg
}

// fetchSource reads the source's settings, asks it for its newest revision
// and renders it. A bad revision leaves the last good one in force.
func (r *GuardReconciler) fetchSource(ctx context.Context, a *attempt) stop {
	g := a.g
	// spec.helm.valuesFrom is read as the Guard's identity, as its writes.
	req, err := RequestIn(ctx, r.Client, g, r.SecretNamespace, RenderCluster{Values: a.applier.Client, Capabilities: r.Capabilities})
	if invalid := (*InvalidSourceError)(nil); errors.As(err, &invalid) {
		r.stalled(g, v1alpha1.ReasonInvalidSource, err.Error())
		return &ctrl.Result{}
	}
	if settings := (*RenderSettingsError)(nil); errors.As(err, &settings) {
		return r.failed(ctx, g, v1alpha1.ReasonRenderSettingsFailed, err.Error())
	}
	if err != nil {
		return r.failed(ctx, g, v1alpha1.ReasonAuthFailed, err.Error())
	}
	a.req = req

	// Guards of one repository reconciled together share a ref listing,
	// unless a person asked for this reconcile or sync: then the remote is
	// asked.
	if !requestPending(g) {
		req.ListingMaxAge, req.ListingSince = ListingReuse, a.queued
	}
	// A revision the status says failed is not rendered again before its
	// backoff (a new leader would otherwise render it at once).
	req.Failed = failedRevision(g, r.interval(g), time.Now())
	fetchStart := time.Now()
	rev, snap, err := r.Fetcher.Fetch(ctx, req)
	observeFetch(time.Since(fetchStart))
	if rev != "" && rev != g.Status.LastAttemptedRevision {
		g.Status.LastAttemptedRevision = rev
		g.Status.Retries = 0 // a new revision starts afresh
	}
	var renderErr *render.RenderError
	switch {
	case errors.As(err, &renderErr):
		msg := fmt.Sprintf("revision %s cannot be applied, %s stays in force: %v", short(rev), orNone(short(g.Status.LastAppliedRevision)), err)
		r.stalled(g, v1alpha1.ReasonRenderFailed, msg)
		recordRenderFailure(g, rev, err, r.interval(g), time.Now())
		r.record(ctx, audit.Record{Type: audit.Error, Guard: g.Name, Operation: "RENDER", Error: err.Error(),
			Source: &audit.Source{URL: SourceURL(g), Revision: rev, Path: renderErr.Path, Line: renderErr.Line}})
		a.log.Info("render failed; keeping last good revision", "revision", rev, "error", err.Error())
		return stopAfter(jitter(r.interval(g)))
	case err != nil:
		msg := err.Error()
		if source.IsAuthError(err) {
			msg += "; " + credentialsHint(g, r.SecretNamespace)
		}
		return r.failed(ctx, g, v1alpha1.ReasonFetchFailed, fmt.Sprintf("%s; %s stays in force", msg, orNone(short(g.Status.LastAppliedRevision))))
	}
	g.Status.RenderFailure = nil // the revision rendered
	if c := meta.FindStatusCondition(g.Status.Conditions, v1alpha1.ConditionReady); c != nil && sourceFailure[c.Reason] {
		g.Status.Retries = 0 // the source is back: its failures no longer count
	}
	if r.retriesExhausted(g) {
		// The same revision and spec failed more often than spec.retry.limit
		// allows: wait for a change in Git or in the spec.
		return stopAfter(jitter(r.interval(g)))
	}
	a.rev, a.snap = rev, snap
	return nil
}

// prepare decorates the revision and orders it into waves and hooks
// (PlanSync). A bad wave or hook annotation leaves the revision in force
// as it is: Stalled InvalidSyncOrder, naming the object and the value,
// until Git changes.
func (r *GuardReconciler) prepare(ctx context.Context, a *attempt) stop {
	g := a.g
	p := r.prepareOnce(g, a.snap)
	if p.err != nil {
		msg := fmt.Sprintf("revision %s cannot be applied, %s stays in force: %v", short(a.rev), orNone(short(g.Status.LastAppliedRevision)), p.err)
		if !stalledFor(g, v1alpha1.ReasonInvalidSyncOrder, msg) {
			r.event(g, corev1.EventTypeWarning, v1alpha1.ReasonInvalidSyncOrder, msg)
			r.record(ctx, audit.Record{Type: audit.Error, Guard: g.Name, Operation: "RENDER", Reason: v1alpha1.ReasonInvalidSyncOrder, Error: p.err.Error(),
				Source: &audit.Source{URL: SourceURL(g), Revision: a.rev}})
		}
		r.stalled(g, v1alpha1.ReasonInvalidSyncOrder, msg)
		return stopAfter(jitter(r.interval(g)))
	}
	a.snap, a.plan = p.decorated, p.plan
	a.install = g.Status.LastAppliedRevision == ""
	if len(a.snap.Objects) == 0 && len(p.fetched.Objects) > 0 && !g.Spec.AllowEmpty && (len(g.Status.Inventory) > 0 || g.Status.ManagedObjects > 0) {
		// Hooks alone: as empty as a revision of no objects (chooseRevision).
		r.stalled(g, v1alpha1.ReasonEmptyRevision, fmt.Sprintf("revision %s renders only hooks, no objects to keep; %s stays in force and nothing is pruned (set spec.allowEmpty to prune everything)", short(a.rev), orNone(short(g.Status.LastAppliedRevision))))
		return stopAfter(jitter(r.interval(g)))
	}
	return nil
}

// stalledFor reports whether the Guard is Stalled already for reason and msg.
func stalledFor(g *v1alpha1.Guard, reason, msg string) bool {
	c := meta.FindStatusCondition(g.Status.Conditions, v1alpha1.ConditionStalled)
	return c != nil && c.Status == metav1.ConditionTrue && c.Reason == reason && c.Message == msg
}

// publish makes the revision the desired state the informer and the
// webhook compare against, brings the webhook's rules up to its kinds, and
// loads the policy when this Guard's repository holds it.
func (r *GuardReconciler) publish(ctx context.Context, a *attempt) {
	r.Store.Set(a.g.Name, a.snap)
	if r.Protect != nil {
		if err := r.Protect(ctx); err != nil {
			a.log.Error(err, "webhook rules not updated; self-heal still reverts changes to new kinds")
		}
	}
	if r.Policy != nil && r.Policy.Guard == a.g.Name {
		r.loadPolicy(ctx, a.g, a.req, a.rev)
	}
}

// unclaimRefused publishes, after an apply that failed, the revision less
// the objects the API server refused to let the Guard write (Forbidden:
// its account may not, or an admission policy refused it) that the Guard
// never wrote before (they are not in its inventory). The revision is
// published before its apply, so that the webhook and the informer guard
// each object from its first write; a refused object is not the Guard's
// to guard: claimed, the webhook and the compiled index would decide
// everyone's writes of it by this Guard's Git (a tenant's Git naming
// another team's object, or a Namespace or a ClusterRole that does not
// exist yet, would have their creates denied). The objects a sync that
// stopped early never tried (later waves) are asked in a server-side dry
// run, as the Guard's identity (refusedInDryRun): a Git that makes its
// first wave fail would otherwise keep another team's object of a later
// wave claimed for as long as it likes. The next attempt publishes the
// whole revision again.
func (r *GuardReconciler) unclaimRefused(ctx context.Context, a *attempt, cs apply.ChangeSet) {
	refused := map[render.ObjectKey]bool{}
	tried := make(map[render.ObjectKey]bool, len(cs))
	for _, e := range cs {
		if e.Object == nil {
			continue
		}
		tried[e.Object.Key] = true
		if e.Err == nil || !apierrors.IsForbidden(e.Err) {
			continue
		}
		if _, applied := a.inv.Get(e.Object.Key); !applied {
			refused[e.Object.Key] = true
		}
	}
	var untried []*render.Object
	for _, o := range a.snap.Objects {
		if _, applied := a.inv.Get(o.Key); applied || tried[o.Key] {
			continue
		}
		if owner := r.Store.Owner(o.Key); owner != "" && owner != a.g.Name {
			continue // another Guard's: left out of the apply, not refused
		}
		untried = append(untried, o)
	}
	for _, k := range r.refusedInDryRun(ctx, a, untried) {
		refused[k] = true
	}
	if len(refused) == 0 {
		return
	}
	a.log.Info("objects the API server refused, which this Guard never applied, are left out of the desired state the webhook and self-heal guard", "revision", a.rev, "objects", len(refused))
	r.Store.Set(a.g.Name, a.snap.Without(func(o *render.Object) bool { return refused[o.Key] }))
	if r.Protect != nil {
		if err := r.Protect(ctx); err != nil {
			a.log.Error(err, "webhook rules not updated")
		}
	}
}

// applyAndPrune applies the revision, prunes what left Git (after health
// with spec.pruneLast), waits for health with spec.wait, and reports.
func (r *GuardReconciler) applyAndPrune(ctx context.Context, a *attempt) ctrl.Result {
	g, rev, snap := a.g, a.rev, a.snap
	newRevision := rev != g.Status.LastAppliedRevision
	meta.SetStatusCondition(&g.Status.Conditions, metav1.Condition{Type: v1alpha1.ConditionReconciling, Status: metav1.ConditionTrue, Reason: v1alpha1.ReasonProgressing, Message: "applying " + short(rev)})
	start := time.Now()
	if s := r.loadInventory(ctx, a); s != nil {
		return *s
	}
	cs, conflicts, s := r.apply(ctx, a, newRevision)
	if s != nil {
		return *s
	}

	kinds := mergeKinds(g.Status.Inventory, snap.Kinds())
	// The same revision and spec as last time, with no kind left behind, has
	// nothing to prune: skipping the lists keeps a no-op reconcile free of
	// API calls.
	needPrune := g.Spec.Prune && (newRevision || g.Generation != g.Status.ObservedGeneration || len(kinds) != len(snap.Kinds()))
	if needPrune && !g.Spec.PruneLast {
		if s := r.prune(ctx, a, &kinds); s != nil {
			return *s
		}
	}
	if newRevision {
		r.setWaitStart(g.Name, rev)
	}
	if s := r.waitHealthy(ctx, a); s != nil {
		return *s
	}
	if needPrune && g.Spec.PruneLast {
		if s := r.prune(ctx, a, &kinds); s != nil {
			return *s
		}
	}

	if newRevision {
		r.event(g, corev1.EventTypeNormal, "RevisionApplied", fmt.Sprintf("applied revision %s: %d created, %d configured, %d replaced", short(rev), cs.Count(apply.Created), cs.Count(apply.Configured), cs.Count(apply.Replaced)))
	}
	// A new revision, or one whose sync failed before, is recorded as
	// applied once (operation SYNC): commit statuses mark revisions by it.
	syncRecorded := newRevision || g.Status.Retries > 0
	g.Status.LastAppliedRevision = rev
	g.Status.ManagedObjects = count32(len(snap.Objects))
	g.Status.Inventory = inventory(kinds)
	g.Status.Retries = 0
	meta.RemoveStatusCondition(&g.Status.Conditions, v1alpha1.ConditionReconciling)
	meta.RemoveStatusCondition(&g.Status.Conditions, v1alpha1.ConditionStalled)
	// The message is the same at every reconcile of one revision, so that a
	// no-op reconcile has no status to write; what each apply changed is in
	// the audit records and the log.
	msg := fmt.Sprintf("applied revision %s: %d objects", short(rev), len(snap.Objects))
	result := ctrl.Result{RequeueAfter: jitter(r.interval(g))}
	if g.Status.PendingRevision != "" {
		result.RequeueAfter = r.untilGate(g, a.gate)
	}
	if len(conflicts) > 0 {
		meta.SetStatusCondition(&g.Status.Conditions, metav1.Condition{Type: v1alpha1.ConditionReady, Status: metav1.ConditionFalse, Reason: v1alpha1.ReasonObjectConflict,
			Message: msg + "; " + conflictMessage(conflicts)})
		return result
	}
	meta.SetStatusCondition(&g.Status.Conditions, metav1.Condition{Type: v1alpha1.ConditionReady, Status: metav1.ConditionTrue, Reason: v1alpha1.ReasonReconciliationSucceeded, Message: msg})
	if syncRecorded {
		r.record(ctx, audit.Record{Type: audit.Apply, Guard: g.Name, User: apply.FieldManager, Operation: "SYNC", Action: "applied", Reason: msg,
			Source: &audit.Source{URL: SourceURL(g), Revision: rev}})
	}
	a.log.V(1).Info("reconciled", "revision", rev, "objects", len(cs), "created", cs.Count(apply.Created), "configured", cs.Count(apply.Configured), "took", time.Since(start).String())
	return result
}

// apply creates the namespaces spec.createNamespace asks for and applies
// what toApply selects, recording each object as it is applied (a guard
// killed halfway loses no record of what it did).
func (r *GuardReconciler) apply(ctx context.Context, a *attempt, newRevision bool) (apply.ChangeSet, map[render.ObjectKey]string, stop) {
	g := a.g
	if g.Spec.CreateNamespace && (newRevision || g.Status.Retries > 0 || g.Generation != g.Status.ObservedGeneration) {
		var hooks []*Hook
		if a.plan != nil {
			hooks = a.plan.Hooks
		}
		created, err := a.applier.EnsureNamespaces(ctx, g.Name, a.snap, hooks)
		for _, ns := range created {
			r.record(ctx, audit.Record{Type: audit.Apply, Guard: g.Name, User: apply.FieldManager, Operation: "APPLY", Action: string(apply.Created),
				Object: audit.Object{Version: "v1", Kind: "Namespace", Name: ns}, Reason: "spec.createNamespace"})
		}
		if err != nil {
			return nil, nil, r.failed(ctx, g, forbiddenOr(err, v1alpha1.ReasonApplyFailed), err.Error())
		}
	}
	objs, conflicts := r.withoutConflicts(g.Name, r.toApply(g, a.rev, a.snap, a.manual))
	// A sync of the whole revision, new or asked for, runs its hooks and
	// waits for its waves; a reconcile that only corrects drift does not.
	whole := a.manual || newRevision
	cs, err := r.applyInOrder(ctx, a, objs, whole, apply.Options{Force: g.Spec.Force}, func(e apply.Entry) {
		if e.Action == apply.Unchanged {
			return
		}
		rec := audit.Record{Type: audit.Apply, Guard: g.Name, User: apply.FieldManager, Operation: "APPLY", Action: string(e.Action),
			Object: audit.ObjectOf(e.Object), Source: audit.SourceOf(e.Object.Source)}
		if e.Err != nil {
			rec.Type, rec.Error = audit.Error, e.Err.Error()
		}
		r.record(ctx, rec)
	})
	// What was applied is recorded even when the apply failed in part.
	r.recordApplied(a, cs)
	a.inv.SetWaves(a.plan)
	saveErr := r.Inventory.Save(ctx, g, a.inv)
	g.Status.Failed = failedObjects(cs)
	if err != nil {
		r.unclaimRefused(ctx, a, cs)
		failed := cs.Count(apply.Failed)
		reason, msg := v1alpha1.ReasonApplyFailed, err.Error()
		if failed < len(cs) {
			reason = v1alpha1.ReasonPartiallySynced
			msg = fmt.Sprintf("%d of %d objects failed to apply, the rest are applied: %v", failed, len(cs), err)
		}
		reason = forbiddenOr(err, reason)
		if step := (*SyncStepError)(nil); errors.As(err, &step) {
			reason, msg = step.Reason, err.Error()
		}
		if saveErr != nil {
			msg += "; " + saveErr.Error()
		}
		r.reportPartial(ctx, a)
		return cs, conflicts, r.failed(ctx, g, reason, msg)
	}
	if saveErr != nil {
		return cs, conflicts, r.failed(ctx, g, v1alpha1.ReasonInventoryFailed, saveErr.Error())
	}
	return cs, conflicts, nil
}

// prune deletes what left Git of what this guard applied (its inventory),
// looking at the kinds given and those of the inventory, and reports the
// objects that carry its label without being its own; on success kinds
// becomes the revision's kinds.
func (r *GuardReconciler) prune(ctx context.Context, a *attempt, kinds *[]schema.GroupVersionKind) stop {
	g := a.g
	res, err := a.applier.Prune(ctx, g.Name, *kinds, a.snap, a.inv, propagation(g.Spec.PrunePropagationPolicy))
	for _, p := range res.Deleted {
		r.record(ctx, audit.Record{Type: audit.Prune, Guard: g.Name, User: apply.FieldManager, Operation: "DELETE", Action: string(apply.Deleted), Object: prunedObject(p)})
	}
	if len(res.Deleted) > 0 {
		r.event(g, corev1.EventTypeNormal, "Pruned", fmt.Sprintf("deleted %d objects that left Git at %s", len(res.Deleted), short(a.rev)))
	}
	r.reportKept(ctx, a, res.Kept)
	// Entries of what was deleted are dropped even when the prune failed
	// in part.
	saveErr := r.Inventory.Save(ctx, g, a.inv)
	if err != nil {
		return r.failed(ctx, g, v1alpha1.ReasonPruneFailed, errors.Join(err, saveErr).Error())
	}
	if saveErr != nil {
		return r.failed(ctx, g, v1alpha1.ReasonInventoryFailed, saveErr.Error())
	}
	*kinds = a.snap.Kinds()
	return nil
}

// forbiddenOr is v1alpha1.ReasonForbidden when err holds a write the
// Guard's service account may not make, else reason.
func forbiddenOr(err error, reason string) string {
	if fe := (*apply.ForbiddenError)(nil); errors.As(err, &fe) {
		return v1alpha1.ReasonForbidden
	}
	return reason
}

// credentialsHint says where the credentials of a refused fetch came from.
func credentialsHint(g *v1alpha1.Guard, defaultNamespace string) string {
	git := g.Spec.Git
	const field = "spec.git.secretRef"
	if git == nil || git.SecretRef == nil {
		return "the repository needs credentials: name a Secret in " + field
	}
	return "check the credentials in Secret " + secretName(*git.SecretRef, defaultNamespace) + " (" + field + ")"
}

// sourceFailure: reasons of failures to read the source, which end when the
// source answers again.
var sourceFailure = map[string]bool{v1alpha1.ReasonFetchFailed: true, v1alpha1.ReasonAuthFailed: true, v1alpha1.ReasonRenderSettingsFailed: true}

// Requeue delays of a Guard that waits.
const (
	dependencyRequeue = 10 * time.Second
	identityRequeue   = 10 * time.Second
	healthRequeue     = 5 * time.Second
)

// failed reports a failed attempt and schedules the retry with backoff.
// Beyond spec.retry.limit the Guard is Stalled until Git or its spec
// changes (a failed fetch is still tried at every interval).
func (r *GuardReconciler) failed(ctx context.Context, g *v1alpha1.Guard, reason, msg string) stop {
	g.Status.Retries++
	n := g.Status.Retries
	r.event(g, corev1.EventTypeWarning, reason, msg)
	r.record(ctx, audit.Record{Type: audit.Error, Guard: g.Name, Operation: "SYNC", Reason: reason, Error: msg,
		Source: &audit.Source{URL: SourceURL(g), Revision: g.Status.LastAttemptedRevision}})
	if limit := retryLimit(g.Spec.Retry); limit > 0 && n > limit {
		r.stalled(g, reason, fmt.Sprintf("%s; gave up after %d retries: change Git or the Guard's spec to try again", msg, limit))
		return stopAfter(jitter(r.interval(g)))
	}
	d := backoff(g.Spec.Retry, n)
	r.notReady(g, reason, fmt.Sprintf("%s (retry %d in %s)", msg, n, d))
	return stopAfter(d)
}

// retriesExhausted: the current revision and spec failed beyond the limit.
func (r *GuardReconciler) retriesExhausted(g *v1alpha1.Guard) bool {
	limit := retryLimit(g.Spec.Retry)
	return limit > 0 && g.Status.Retries > limit && g.Generation == g.Status.ObservedGeneration &&
		meta.IsStatusConditionTrue(g.Status.Conditions, v1alpha1.ConditionStalled)
}

func (r *GuardReconciler) timeout(g *v1alpha1.Guard) time.Duration {
	if g.Spec.Timeout != nil && g.Spec.Timeout.Duration > 0 {
		return g.Spec.Timeout.Duration
	}
	return max(r.interval(g), time.Minute)
}

// event records a Kubernetes Event on the Guard.
func (r *GuardReconciler) event(g *v1alpha1.Guard, typ, reason, msg string) {
	if r.Events != nil {
		r.Events.Eventf(g, nil, typ, reason, "Reconcile", "%s", truncate(redact.Secrets.String(redact.Text(msg)), 1000))
	}
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// withoutConflicts leaves out objects another Guard already manages (or
// applied before and has not rendered yet in this process): two Guards
// must not take turns writing one object.
func (r *GuardReconciler) withoutConflicts(guard string, objs []*render.Object) ([]*render.Object, map[render.ObjectKey]string) {
	var conflicts map[render.ObjectKey]string
	out := objs[:0:0]
	for _, o := range objs {
		if owner := r.Store.Owner(o.Key); owner != "" && owner != guard {
			if conflicts == nil {
				conflicts = map[render.ObjectKey]string{}
			}
			conflicts[o.Key] = owner
			continue
		}
		out = append(out, o)
	}
	return out, conflicts
}

func conflictMessage(conflicts map[render.ObjectKey]string) string {
	keys := make([]string, 0, len(conflicts))
	for k, owner := range conflicts {
		keys = append(keys, fmt.Sprintf("%s (guard %s)", k, owner))
	}
	sort.Strings(keys)
	if len(keys) > 5 {
		keys = append(keys[:5], fmt.Sprintf("and %d more", len(keys)-5))
	}
	return fmt.Sprintf("%d objects not applied, another Guard manages them: %s", len(conflicts), strings.Join(keys, ", "))
}

// toApply selects what a reconcile applies. A new revision, or any revision
// a person asked to sync, is applied whole. The same revision again corrects
// drift only where self-heal is on, and leaves alone the drift the policy
// accepted (break-glass until its TTL, warn, enforcement off), which the
// drift watcher owns.
func (r *GuardReconciler) toApply(g *v1alpha1.Guard, rev string, snap *render.Snapshot, manual bool) []*render.Object {
	if manual || rev != g.Status.LastAppliedRevision || r.Drift == nil {
		return snap.Objects
	}
	if !g.SelfHealEnabled() {
		return nil
	}
	out := make([]*render.Object, 0, len(snap.Objects))
	for _, o := range snap.Objects {
		if !r.Drift.Accepted(o.GVK(), o.Key.Namespace, o.Key.Name) {
			out = append(out, o)
		}
	}
	return out
}

func (r *GuardReconciler) record(ctx context.Context, rec audit.Record) {
	if r.Audit != nil {
		r.Audit.Log(ctx, rec)
	}
}

func mergeKinds(inv []v1alpha1.InventoryKind, kinds []schema.GroupVersionKind) []schema.GroupVersionKind {
	seen := map[schema.GroupVersionKind]bool{}
	var out []schema.GroupVersionKind
	add := func(k schema.GroupVersionKind) {
		if !seen[k] {
			seen[k] = true
			out = append(out, k)
		}
	}
	for _, k := range kinds {
		add(k)
	}
	for _, k := range inv {
		add(schema.GroupVersionKind{Group: k.Group, Version: k.Version, Kind: k.Kind})
	}
	return out
}

func inventory(kinds []schema.GroupVersionKind) []v1alpha1.InventoryKind {
	out := make([]v1alpha1.InventoryKind, 0, len(kinds))
	for _, k := range kinds {
		out = append(out, v1alpha1.InventoryKind{Group: k.Group, Version: k.Version, Kind: k.Kind})
	}
	sort.Slice(out, func(i, j int) bool {
		return strings.Join([]string{out[i].Group, out[i].Kind, out[i].Version}, "/") < strings.Join([]string{out[j].Group, out[j].Kind, out[j].Version}, "/")
	})
	return out
}

func short(rev string) string {
	return source.ShortRevision(rev)
}

func orNone(rev string) string {
	if rev == "" {
		return "no revision"
	}
	return "revision " + rev
}

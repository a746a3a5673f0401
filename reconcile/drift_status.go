package reconcile

import (
	"context"
	"encoding/json"
	"sync"
	"time"

	"github.com/go-logr/logr"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/driftguard/driftguard/api/v1alpha1"
	"github.com/driftguard/driftguard/render"
)

// DriftStatus keeps status.driftedObjects, status.drifted and, with Health,
// status.health, status.unhealthy and the Healthy condition of each Guard
// current between full reconciles, so kubectl get guards shows drift and
// health as they happen. Changes are batched: at most one status patch per
// Guard a period. (A change of health state is recorded by the
// HealthTracker's OnChange, whoever sums it up.)
type DriftStatus struct {
	Client client.Client
	Drift  DriftState
	// Health and Store, when set, sum up health too.
	Health *HealthTracker
	Store  *render.Store
	// Requeue, when set, asks for a full reconcile of a Guard that waits
	// for health (Ready=False, reason Progressing) when its health state
	// changed, so that it turns Ready without waiting for its requeue
	// (GuardReconciler.Enqueue).
	Requeue func(guard string)
	Period  time.Duration
	Log     logr.Logger
	// Writes, when set (shared with GuardReconciler.Writes), lets a
	// change the informer reported go unwritten when the cached Guard
	// already holds this process's last status write and the status would
	// come out the same (StatusWrites).
	Writes *StatusWrites

	mu      sync.Mutex
	pending map[string]pendingWork
}

// pendingWork is what is to be done for a Guard at the next period.
type pendingWork struct {
	// changed: the informer saw a change, so the status is written even if
	// it looks the same in the (possibly stale) cache.
	changed bool
	// health: sum up health again (its sum costs a look at every object,
	// so a change of drift alone does not).
	health bool
}

// Changed marks a Guard whose set of drifted objects changed.
func (d *DriftStatus) Changed(guard string) { d.mark(guard, pendingWork{changed: true}) }

// HealthChanged marks a Guard one of whose objects changed health state.
func (d *DriftStatus) HealthChanged(guard string) {
	d.mark(guard, pendingWork{changed: true, health: true})
}

// Recheck marks a Guard whose health is to be summed up again though no
// object changed (HealthTracker.Recheck); its status is written only if
// the new summary differs from it.
func (d *DriftStatus) Recheck(guard string) { d.mark(guard, pendingWork{health: true}) }

func (d *DriftStatus) mark(guard string, w pendingWork) {
	d.mu.Lock()
	if d.pending == nil {
		d.pending = map[string]pendingWork{}
	}
	p := d.pending[guard]
	d.pending[guard] = pendingWork{changed: p.changed || w.changed, health: p.health || w.health}
	d.mu.Unlock()
}

// Start patches pending Guards every period until ctx ends.
func (d *DriftStatus) Start(ctx context.Context) error {
	period := d.Period
	if period <= 0 {
		period = time.Second
	}
	t := time.NewTicker(period)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
		d.mu.Lock()
		guards := d.pending
		d.pending = nil
		d.mu.Unlock()
		// Every summary of the batch was asked for by now: they share
		// their EndpointSlice lists.
		batch := WithSharedReads(ctx)
		for guard, w := range guards {
			if err := d.patch(batch, guard, w); err != nil && !apierrors.IsNotFound(err) {
				d.Log.Error(err, "update drift status", "guard", guard)
			}
		}
	}
}

func (d *DriftStatus) patch(ctx context.Context, guard string, w pendingWork) error {
	if d.Writes.leftToReconcile(guard) {
		// Its reconcile writes drift, sync and health with its status;
		// what changes after, the next period writes.
		d.mark(guard, w)
		return nil
	}
	var g v1alpha1.Guard
	if err := d.Client.Get(ctx, client.ObjectKey{Name: guard}, &g); err != nil {
		return err
	}
	known, current := d.Writes.holds(&g)
	if known && !current {
		// The cache lags behind this process's last write: a patch with
		// its resourceVersion would be refused. Next period.
		d.mark(guard, w)
		return nil
	}
	n, names := drifted(d.Drift, guard)
	setDrifted(guard, n)
	status := map[string]any{"driftedObjects": n, "drifted": orNull(names)}
	after := g.Status.DeepCopy()
	after.DriftedObjects, after.Drifted = n, names
	if states, ok := d.Drift.(SyncStates); ok && d.Store != nil {
		snap, _ := d.Store.Snapshot(guard)
		after.Sync = SummarizeSync(snap, states)
		setSyncMetric(guard, after.Sync)
		status["sync"] = syncPatch(after.Sync)
	}
	if w.health && d.Health != nil && d.Store != nil && (g.Status.LastAppliedRevision != "" || g.Status.ManagedObjects > 0) {
		if snap, ok := d.Store.Snapshot(guard); ok {
			sum := d.Health.Summarize(ctx, &g, snap)
			setHealth(after, sum)
			status["health"], status["unhealthy"] = string(sum.State), orNull(sum.Objects)
			// The whole list: a merge patch replaces lists. The
			// resourceVersion below keeps it from undoing conditions a
			// reconcile wrote since the Guard was read.
			status["conditions"] = after.Conditions
		}
	}
	withoutSecrets(after) // in place: status shares its lists
	if (!w.changed || current) && apiequality.Semantic.DeepEqual(&g.Status, after) {
		// A recheck that found nothing new, or a change already written
		// (the cache holds the last write: the comparison is with it).
		return nil
	}
	body, err := json.Marshal(map[string]any{"metadata": map[string]any{"resourceVersion": g.ResourceVersion}, "status": status})
	if err != nil {
		return err
	}
	patched := &v1alpha1.Guard{ObjectMeta: metav1.ObjectMeta{Name: guard}}
	if err := d.Client.Status().Patch(ctx, patched, client.RawPatch(types.MergePatchType, body)); err != nil {
		if apierrors.IsConflict(err) {
			// The Guard changed since it was read (the cache may lag
			// behind a reconcile's status write): try again next period.
			d.mark(guard, pendingWork{changed: true, health: w.health})
			return nil
		}
		return err
	}
	d.Writes.wrote(guard, patched.ResourceVersion)
	if after.Health != g.Status.Health {
		if ready := meta.FindStatusCondition(g.Status.Conditions, v1alpha1.ConditionReady); d.Requeue != nil && g.Spec.Wait &&
			ready != nil && ready.Status == metav1.ConditionFalse && ready.Reason == v1alpha1.ReasonProgressing {
			d.Requeue(guard)
		}
	}
	return nil
}

// orNull is nil for an empty list: a merge patch then removes the field.

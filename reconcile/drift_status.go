package reconcile

import (
	"context"
	"encoding/json"
	"sync"
	"time"

	"github.com/go-logr/logr"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/driftguard/driftguard/api/v1alpha1"
	"github.com/driftguard/driftguard/gitstore"
)

// DriftStatus keeps status.driftedObjects, status.drifted and, with Health,
// status.health and status.unhealthy of each Guard current between full
// reconciles, so kubectl get guards shows drift and health as they happen.
// Changes are batched: at most one status patch per Guard a period.
type DriftStatus struct {
	Client client.Client
	Drift  DriftState
	// Health and Store, when set, sum up health too.
	Health *HealthTracker
	Store  *gitstore.Store
	Period time.Duration
	Log    logr.Logger

	mu      sync.Mutex
	pending map[string]bool
}

// Changed marks a Guard whose drift changed.
func (d *DriftStatus) Changed(guard string) {
	d.mu.Lock()
	if d.pending == nil {
		d.pending = map[string]bool{}
	}
	d.pending[guard] = true
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
		for guard := range guards {
			if err := d.patch(ctx, guard); err != nil && !apierrors.IsNotFound(err) {
				d.Log.Error(err, "update drift status", "guard", guard)
			}
		}
	}
}

func (d *DriftStatus) patch(ctx context.Context, guard string) error {
	var g v1alpha1.Guard
	if err := d.Client.Get(ctx, client.ObjectKey{Name: guard}, &g); err != nil {
		return err
	}
	n, names := d.Drift.Drifted(guard, maxDriftedListed)
	setDrifted(guard, n)
	status := map[string]any{"driftedObjects": n, "drifted": orNull(names)}
	if d.Health != nil && d.Store != nil && g.Status.LastAppliedRevision != "" {
		if snap, ok := d.Store.Snapshot(guard); ok {
			sum := d.Health.Summarize(ctx, &g, snap)
			status["health"], status["unhealthy"] = string(sum.State), orNull(sum.Unhealthy)
		}
	}
	body, err := json.Marshal(map[string]any{"status": status})
	if err != nil {
		return err
	}
	return d.Client.Status().Patch(ctx, &v1alpha1.Guard{ObjectMeta: metav1.ObjectMeta{Name: guard}}, client.RawPatch(types.MergePatchType, body))
}

// orNull is nil for an empty list: a merge patch then removes the field.
func orNull(list []string) any {
	if len(list) == 0 {
		return nil
	}
	return list
}

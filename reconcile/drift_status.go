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
)

// DriftStatus keeps status.driftedObjects and status.drifted of each Guard
// current between full reconciles, so kubectl get guards shows drift as it
// happens. Changes are batched: at most one status patch per Guard a period.
type DriftStatus struct {
	Client client.Client
	Drift  DriftState
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
	n, names := d.Drift.Drifted(guard, maxDriftedListed)
	var list any = names
	if len(names) == 0 {
		list = nil // a merge patch removes the field
	}
	body, err := json.Marshal(map[string]any{"status": map[string]any{"driftedObjects": n, "drifted": list}})
	if err != nil {
		return err
	}
	g := &v1alpha1.Guard{ObjectMeta: metav1.ObjectMeta{Name: guard}}
	return d.Client.Status().Patch(ctx, g, client.RawPatch(types.MergePatchType, body))
}

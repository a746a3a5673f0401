package reconcile

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/driftguard/driftguard/apply"
	"github.com/driftguard/driftguard/render"
)

// dryRunVerdicts are what server-side dry runs told of the objects of one
// revision of a Guard: whether the API server lets the Guard write each
// (false: Forbidden). Kept across the attempts of that revision, so that
// each retry asks only what no dry run answered yet.
type dryRunVerdicts struct {
	rev    string
	writes map[render.ObjectKey]bool
}

// Dry runs of one failed attempt: a few at a time, within a time of their
// own (a sync that waited out its deadline leaves the attempt's context
// almost spent).
const (
	dryRunWorkers = 4
	dryRunBudget  = 20 * time.Second
)

// refusedInDryRun returns the objects the API server does not let the
// Guard write, asking those no earlier dry run of this revision answered,
// in server-side dry runs as the Guard's identity. Answers other than
// Forbidden (a namespace an earlier wave creates, a kind not defined yet)
// let the object be: its own apply tells. An object not asked (the budget
// ran out, the API server stopped answering) counts as refused until an
// answer says otherwise: the order of the objects is the Git committer's,
// who must not be able to put one beyond what gets asked.
func (r *GuardReconciler) refusedInDryRun(ctx context.Context, a *attempt, objs []*render.Object) []render.ObjectKey {
	r.mu.Lock()
	v := r.dryRuns[a.g.Name]
	if v == nil || v.rev != a.rev {
		v = &dryRunVerdicts{rev: a.rev, writes: map[render.ObjectKey]bool{}}
		if r.dryRuns == nil {
			r.dryRuns = map[string]*dryRunVerdicts{}
		}
		r.dryRuns[a.g.Name] = v
	}
	var ask []*render.Object
	for _, o := range objs {
		if _, known := v.writes[o.Key]; !known {
			ask = append(ask, o)
		}
	}
	r.mu.Unlock()

	answers := dryRunAll(ctx, a.applier, ask)

	r.mu.Lock()
	defer r.mu.Unlock()
	for k, writes := range answers {
		v.writes[k] = writes
	}
	var refused []render.ObjectKey
	for _, o := range objs {
		if writes, known := v.writes[o.Key]; !known || !writes {
			refused = append(refused, o.Key)
		}
	}
	return refused
}

// dryRunAll dry-runs each object as e's identity, dryRunWorkers at a
// time, for at most dryRunBudget, and returns whether the API server let
// each write it (objects not answered are left out).
func dryRunAll(ctx context.Context, e engine, objs []*render.Object) map[render.ObjectKey]bool {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), dryRunBudget)
	defer cancel()
	var (
		mu   sync.Mutex
		out  = map[render.ObjectKey]bool{}
		wg   sync.WaitGroup
		gone atomic.Bool // the API server stopped answering, or the budget ran out
		next = make(chan *render.Object)
	)
	for range min(len(objs), dryRunWorkers) {
		wg.Go(func() {
			for o := range next {
				if gone.Load() {
					continue
				}
				// A copy: the dry run keeps its answer as the object's
				// server values, and the snapshot's are shared.
				err := e.DryRun(ctx, render.NewObjectFrom(o.Obj().DeepCopy(), o), nil)
				if err != nil && (apply.Unreachable(err) || ctx.Err() != nil) {
					gone.Store(true)
					continue
				}
				mu.Lock()
				out[o.Key] = err == nil || !apierrors.IsForbidden(err)
				mu.Unlock()
			}
		})
	}
	for _, o := range objs {
		next <- o
	}
	close(next)
	wg.Wait()
	return out
}

package reconcile

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/driftguard/driftguard/api/v1alpha1"
	"github.com/driftguard/driftguard/health"
	"github.com/driftguard/driftguard/render"
)

// SyncStepError is a sync that stopped at a step of its order: a hook that
// failed, a wave that did not become healthy. Reason is the Guard's
// condition reason.
type SyncStepError struct {
	Reason string
	Err    error
}

func (e *SyncStepError) Error() string { return e.Err.Error() }
func (e *SyncStepError) Unwrap() error { return e.Err }

// waitMargin is kept of the reconcile's time for reporting after a wait
// that ran out.
const waitMargin = 3 * time.Second

// wavePoll is how often the health of a wave is looked at.
const wavePoll = time.Second

// applyInOrder applies objs in the revision's order: wave by wave when it
// has several waves or hooks (applyOrdered), else in the Applier's stages.
func (r *GuardReconciler) applyInOrder(ctx context.Context, a *attempt, objs []*render.Object, whole bool, opts ApplyOptions, each func(Entry)) (ChangeSet, error) {
	if a.plan == nil || !a.plan.Ordered() {
		return a.applier.ApplyEach(ctx, objs, opts, each)
	}
	return r.applyOrdered(ctx, a, objs, whole, opts, each)
}

// applyOrdered applies objs wave by wave (a.plan). In a whole sync (a new
// revision, or one a person asked for) it also runs the hooks: PreSync
// first (after the Namespaces and definitions that name no wave), each
// wave's Sync hooks after the wave is applied, PostSync last;
// with spec.wait each wave is healthy before the next one (and before
// PostSync hooks). When anything fails, the SyncFail hooks run and the
// sync stops: later waves are not applied.
func (r *GuardReconciler) applyOrdered(ctx context.Context, a *attempt, objs []*render.Object, whole bool, opts ApplyOptions, each func(Entry)) (ChangeSet, error) {
	deadline := time.Now().Add(r.timeout(a.g))
	if d, ok := ctx.Deadline(); ok {
		deadline = d.Add(-waitMargin)
	}
	var cs ChangeSet
	fail := func(err error) (ChangeSet, error) {
		if whole {
			if ferr := r.runHooks(ctx, a, PhaseSyncFail, nil, deadline); ferr != nil {
				err = errors.Join(err, ferr)
			}
		}
		return cs, err
	}
	preSyncDone := !whole
	preSync := func() error {
		if preSyncDone {
			return nil
		}
		preSyncDone = true
		if err := r.runHooks(ctx, a, PhasePreSync, nil, deadline); err != nil {
			return &SyncStepError{Reason: v1alpha1.ReasonHookFailed, Err: err}
		}
		return nil
	}
	keep := make(map[render.ObjectKey]bool, len(objs))
	for _, o := range objs {
		keep[o.Key] = true
	}
	steps := waveSteps(a.plan, a.install, whole)
	postSync := whole && len(a.plan.HooksAt(PhasePostSync, a.install, nil)) > 0
	for i, n := range steps {
		if !n.definitions {
			// Namespaces and definitions that name no wave exist before
			// the PreSync hooks, which may live in them or use them.
			if err := preSync(); err != nil {
				return fail(err)
			}
		}
		wobjs := n.objects(a.plan.Waves, keep)
		if len(wobjs) > 0 {
			part, err := a.applier.ApplyEach(ctx, wobjs, opts, each)
			cs = append(cs, part...)
			if err != nil {
				if i < len(steps)-1 {
					err = fmt.Errorf("%s: %w; the waves after it are not applied", n, err)
				}
				return fail(err)
			}
		}
		if whole && !n.definitions {
			number := n.number
			if err := r.runHooks(ctx, a, PhaseSync, &number, deadline); err != nil {
				return fail(&SyncStepError{Reason: v1alpha1.ReasonHookFailed, Err: err})
			}
		}
		if whole && a.g.Spec.Wait && (i < len(steps)-1 || postSync) {
			if err := r.waitWave(ctx, a, n, wobjs, deadline); err != nil {
				return fail(&SyncStepError{Reason: v1alpha1.ReasonHealthCheckFailed, Err: err})
			}
		}
	}
	if err := preSync(); err != nil {
		return fail(err)
	}
	if whole {
		if err := r.runHooks(ctx, a, PhasePostSync, nil, deadline); err != nil {
			return fail(&SyncStepError{Reason: v1alpha1.ReasonHookFailed, Err: err})
		}
	}
	return cs, nil
}

// objects are the objects of the step's wave that this sync applies (keep).
func (s waveStep) objects(waves []Wave, keep map[render.ObjectKey]bool) []*render.Object {
	var out []*render.Object
	for _, w := range waves {
		if w.Number != s.number || w.Definitions != s.definitions {
			continue
		}
		for _, o := range w.Objects {
			if keep[o.Key] {
				out = append(out, o)
			}
		}
	}
	return out
}

// waveStep is one wave of a sync: its number, or the wave of Namespaces
// and CustomResourceDefinitions that name none.
type waveStep struct {
	number      int
	definitions bool
}

func (s waveStep) String() string {
	if s.definitions {
		return "the namespaces and definitions"
	}
	return fmt.Sprintf("wave %d", s.number)
}

// waveSteps lists the waves of a sync in order: the waves of objects and,
// in a whole sync, those of Sync hooks.
func waveSteps(p *SyncPlan, install, whole bool) []waveStep {
	var steps []waveStep
	numbers := map[int]bool{}
	for _, w := range p.Waves {
		if w.Definitions {
			steps = append(steps, waveStep{number: w.Number, definitions: true})
			continue
		}
		numbers[w.Number] = true
	}
	if whole {
		for _, h := range p.Hooks {
			if slices.Contains(h.Phases(install), PhaseSync) {
				numbers[h.Wave] = true
			}
		}
	}
	for _, n := range slices.Sorted(func(yield func(int) bool) {
		for n := range numbers {
			if !yield(n) {
				return
			}
		}
	}) {
		steps = append(steps, waveStep{number: n})
	}
	return steps
}

// waitWave waits until the objects of a wave are healthy.
func (r *GuardReconciler) waitWave(ctx context.Context, a *attempt, n waveStep, objs []*render.Object, deadline time.Time) error {
	if r.Health == nil || len(objs) == 0 {
		return nil
	}
	start := time.Now()
	var sum HealthSummary
	for {
		sum = r.Health.Assess(ctx, a.g, objs)
		if sum.State == health.Healthy {
			a.log.V(1).Info("wave healthy", "wave", n.String(), "took", time.Since(start).String())
			return nil
		}
		if time.Now().Add(wavePoll).After(deadline) {
			break
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s not healthy: %w", n, ctx.Err())
		case <-time.After(wavePoll):
		}
	}
	return fmt.Errorf("%s not healthy within %s, the waves after it are not applied: %s", n, time.Since(start).Round(time.Second), strings.Join(sum.Unhealthy, "; "))
}

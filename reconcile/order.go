package reconcile

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/driftguard/driftguard/apply"
	"github.com/driftguard/driftguard/render"
)

// Annotations in Git that order a sync (docs/reconciliation.md, "Ordering
// a sync"). They are read from the object as Git renders it, never from the
// live object: whoever may edit an object in the cluster cannot make it a
// hook (unguarded, never pruned) or move it to another wave.
const (
	// SyncWaveAnnotation puts an object in a wave (an integer, default 0):
	// waves are applied in ascending order and pruned in descending order.
	SyncWaveAnnotation = "driftguard.io/sync-wave"
	// ArgoSyncWaveAnnotation is Argo CD's; read when SyncWaveAnnotation is
	// not set, so Argo CD repositories move over unchanged.
	ArgoSyncWaveAnnotation = "argocd.argoproj.io/sync-wave"

	// A hook's weight and delete policies; what makes an object a hook at
	// all is apply.HelmHookAnnotation or apply.ArgoHookAnnotation (apply.IsHook).
	HelmHookWeightAnnotation       = "helm.sh/hook-weight"
	HelmHookDeletePolicyAnnotation = "helm.sh/hook-delete-policy"
	ArgoHookDeletePolicyAnnotation = "argocd.argoproj.io/hook-delete-policy"

	// HookLabel marks an object the guard created as a hook of the Guard
	// named by its value. Hooks carry it instead of apply.GuardLabel: the
	// informer, the webhook and prune select on GuardLabel only.
	HookLabel = "driftguard.io/hook-of"
)

// Phase is when a hook runs in a sync.
type Phase string

// Phases of a sync, in the order they run (SyncFail only when it failed).
const (
	PhasePreSync  Phase = "PreSync"
	PhaseSync     Phase = "Sync"
	PhasePostSync Phase = "PostSync"
	PhaseSyncFail Phase = "SyncFail"
)

// Hook is an object of Git that is run at a phase of a sync instead of
// being applied and kept in sync.
type Hook struct {
	Object *render.Object
	// Phases the hook runs at, for an install (the Guard's first sync)
	// and for an upgrade (every later one). Argo CD's hooks run at the
	// same phase in both; Helm's pre-install and pre-upgrade differ.
	Install, Upgrade []Phase
	Wave             int
	Weight           int
	// Delete policies: before the hook is created again, once it
	// succeeded, once it failed.
	DeleteBefore, DeleteSucceeded, DeleteFailed bool
	// ServerLabels: Git gives the hook no labels, so it is created with
	// those the API server gives such an object (SyncHooks), and a Job
	// with its job-name and controller-uid labels once created
	// (apply.Applier.LabelCreatedJob).
	ServerLabels bool
}

// Phases returns the phases the hook runs at in an install or an upgrade.
func (h *Hook) Phases(install bool) []Phase {
	if install {
		return h.Install
	}
	return h.Upgrade
}

// Wave is the objects of one sync wave, applied together.
type Wave struct {
	Number int
	// Definitions: the wave of Namespaces and CustomResourceDefinitions
	// that name no wave, applied before every other.
	Definitions bool
	Objects     []*render.Object
}

// SyncPlan is a revision's objects in the order a sync applies them: its
// waves in ascending order (Namespaces and CustomResourceDefinitions that
// name no wave in a wave of their own before every other), and its hooks.
type SyncPlan struct {
	Waves []Wave
	Hooks []*Hook
}

// Ordered reports whether the plan asks for more than the plain staged
// apply: several waves, or hooks.
func (p *SyncPlan) Ordered() bool {
	waves := 0
	for _, w := range p.Waves {
		if !w.Definitions {
			waves++
		}
	}
	return waves > 1 || len(p.Hooks) > 0
}

// HooksAt returns the hooks of a phase (and, for PhaseSync, of one wave)
// grouped by wave and weight, each group in the order it runs.
func (p *SyncPlan) HooksAt(phase Phase, install bool, wave *int) [][]*Hook {
	var hs []*Hook
	for _, h := range p.Hooks {
		if slices.Contains(h.Phases(install), phase) && (wave == nil || h.Wave == *wave) {
			hs = append(hs, h)
		}
	}
	slices.SortStableFunc(hs, func(a, b *Hook) int {
		return cmp.Or(cmp.Compare(a.Wave, b.Wave), cmp.Compare(a.Weight, b.Weight),
			cmp.Compare(a.Object.Key.Kind, b.Object.Key.Kind), cmp.Compare(a.Object.Key.Name, b.Object.Key.Name))
	})
	var groups [][]*Hook
	for i, h := range hs {
		if i == 0 || h.Wave != hs[i-1].Wave || h.Weight != hs[i-1].Weight {
			groups = append(groups, nil)
		}
		groups[len(groups)-1] = append(groups[len(groups)-1], h)
	}
	return groups
}

// PlanSync orders objs (a rendered revision, as Git has it) into waves and
// hooks. A bad annotation value is a *render.RenderError (several are
// render.RenderErrors) at the object's file and line, naming the object,
// the annotation and the value.
func PlanSync(objs []*render.Object) (*SyncPlan, error) {
	p := &SyncPlan{}
	byWave := map[int][]*render.Object{}
	var definitions []*render.Object
	var errs render.RenderErrors
	for _, o := range objs {
		ann := o.Obj().GetAnnotations()
		wave, explicit, err := waveOf(ann)
		if err != nil {
			errs = append(errs, objectError(o, err))
			continue
		}
		if apply.IsHook(o) {
			h, err := hookOf(o, ann, wave)
			if err != nil {
				errs = append(errs, objectError(o, err))
				continue
			}
			if h != nil {
				p.Hooks = append(p.Hooks, h)
			}
			continue
		}
		if o.Obj().GetName() == "" {
			errs = append(errs, objectError(o, errors.New("metadata.generateName without metadata.name is only for hooks (helm.sh/hook or argocd.argoproj.io/hook): the guard must know an object's name to keep it in sync")))
			continue
		}
		if !explicit && isDefinition(o.Key) {
			definitions = append(definitions, o)
			continue
		}
		byWave[wave] = append(byWave[wave], o)
	}
	switch len(errs) {
	case 0:
	case 1:
		return nil, errs[0]
	default:
		return nil, errs
	}
	numbers := slices.Sorted(func(yield func(int) bool) {
		for n := range byWave {
			if !yield(n) {
				return
			}
		}
	})
	if len(definitions) > 0 {
		first := 0
		if len(numbers) > 0 {
			first = min(numbers[0], 0)
		}
		// A wave of their own before every other: the objects of the
		// lowest wave may live in them.
		p.Waves = append(p.Waves, Wave{Number: first, Definitions: true, Objects: definitions})
	}
	for _, n := range numbers {
		p.Waves = append(p.Waves, Wave{Number: n, Objects: byWave[n]})
	}
	return p, nil
}

func isDefinition(k render.ObjectKey) bool {
	return (k.Group == "" && k.Kind == "Namespace") || (k.Group == "apiextensions.k8s.io" && k.Kind == "CustomResourceDefinition")
}

// objectError is a *render.RenderError at the object's file and line,
// naming the object: a problem of the revision's content, like any other
// render error (driftguard validate lists it).
func objectError(o *render.Object, err error) *render.RenderError {
	return &render.RenderError{Path: o.Source.Path, Line: o.Source.Line, Err: fmt.Errorf("%s: %w", o.Key.Display(), err)}
}

// where is "file:line", or "file" where the line is not known (a chart's
// template).
func where(src render.Source) string {
	if src.Line > 0 {
		return fmt.Sprintf("%s:%d", src.Path, src.Line)
	}
	return src.Path
}

// waveOf reads an object's wave: driftguard's annotation, else Argo CD's,
// else 0. explicit is true when one of them is set.
func waveOf(ann map[string]string) (wave int, explicit bool, err error) {
	for _, key := range []string{SyncWaveAnnotation, ArgoSyncWaveAnnotation} {
		v, ok := ann[key]
		if !ok {
			continue
		}
		n, err := annotationInt(key, v)
		return n, true, err
	}
	return 0, false, nil
}

// annotationInt parses an integer annotation within ±2^31 (as Argo CD and
// Helm read them).
func annotationInt(key, v string) (int, error) {
	n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 32)
	if err != nil || n < math.MinInt32 || n > math.MaxInt32 {
		return 0, fmt.Errorf("annotation %s: %q is not an integer between %d and %d", key, v, math.MinInt32, math.MaxInt32)
	}
	return int(n), nil
}

// Helm's hook events and the phases they run at (install, upgrade). Test
// hooks never reach here: the Helm render leaves them out. Events driftguard
// has no moment for (rollback, post-delete) are accepted and never run.
var helmEvents = map[string][2]Phase{
	"pre-install":   {PhasePreSync, ""},
	"post-install":  {PhasePostSync, ""},
	"pre-upgrade":   {"", PhasePreSync},
	"post-upgrade":  {"", PhasePostSync},
	"pre-delete":    {"", ""},
	"post-delete":   {"", ""},
	"pre-rollback":  {"", ""},
	"post-rollback": {"", ""},
	"test":          {"", ""},
	"test-success":  {"", ""},
	"test-failure":  {"", ""},
}

// Argo CD's hook types. Skip leaves the object out of the sync; PreDelete
// and PostDelete are accepted and never run (driftguard deletes nothing
// when a Guard is deleted).
var argoHooks = map[string]Phase{
	"PreSync": PhasePreSync, "Sync": PhaseSync, "PostSync": PhasePostSync, "SyncFail": PhaseSyncFail,
	"Skip": "", "PreDelete": "", "PostDelete": "",
}

// hookOf reads a hook's phases, weight and delete policies. Argo CD's
// annotations win over Helm's on an object that has both, as in Argo CD.
// It returns nil for a hook that never runs.
func hookOf(o *render.Object, ann map[string]string, wave int) (*Hook, error) {
	h := &Hook{Object: o, Wave: wave}
	if v, ok := ann[apply.ArgoHookAnnotation]; ok {
		for t := range strings.SplitSeq(v, ",") {
			t = strings.TrimSpace(t)
			ph, known := argoHooks[t]
			if !known {
				return nil, fmt.Errorf("annotation %s: %q is not a hook type (PreSync, Sync, PostSync, SyncFail, Skip)", apply.ArgoHookAnnotation, t)
			}
			h.Install, h.Upgrade = appendPhase(h.Install, ph), appendPhase(h.Upgrade, ph)
		}
		if err := h.deletePolicies(ArgoHookDeletePolicyAnnotation, ann[ArgoHookDeletePolicyAnnotation], map[string]*bool{
			"BeforeHookCreation": &h.DeleteBefore, "HookSucceeded": &h.DeleteSucceeded, "HookFailed": &h.DeleteFailed,
		}); err != nil {
			return nil, err
		}
	} else {
		for e := range strings.SplitSeq(ann[apply.HelmHookAnnotation], ",") {
			e = strings.TrimSpace(e)
			ph, known := helmEvents[e]
			if !known {
				return nil, fmt.Errorf("annotation %s: %q is not a hook event (pre-install, post-install, pre-upgrade, post-upgrade, pre-delete, …)", apply.HelmHookAnnotation, e)
			}
			h.Install, h.Upgrade = appendPhase(h.Install, ph[0]), appendPhase(h.Upgrade, ph[1])
		}
		if v, ok := ann[HelmHookWeightAnnotation]; ok {
			w, err := annotationInt(HelmHookWeightAnnotation, v)
			if err != nil {
				return nil, err
			}
			h.Weight = w
		}
		if err := h.deletePolicies(HelmHookDeletePolicyAnnotation, ann[HelmHookDeletePolicyAnnotation], map[string]*bool{
			"before-hook-creation": &h.DeleteBefore, "hook-succeeded": &h.DeleteSucceeded, "hook-failed": &h.DeleteFailed,
		}); err != nil {
			return nil, err
		}
	}
	if len(h.Install) == 0 && len(h.Upgrade) == 0 {
		return nil, nil
	}
	return h, nil
}

// deletePolicies sets the policies a comma-separated value names; none
// means before-hook-creation, as in Helm 3 and Argo CD.
func (h *Hook) deletePolicies(key, v string, names map[string]*bool) error {
	if strings.TrimSpace(v) == "" {
		h.DeleteBefore = true
		return nil
	}
	for p := range strings.SplitSeq(v, ",") {
		p = strings.TrimSpace(p)
		set, ok := names[p]
		if !ok {
			known := slices.Sorted(func(yield func(string) bool) {
				for n := range names {
					if !yield(n) {
						return
					}
				}
			})
			return fmt.Errorf("annotation %s: %q is not a delete policy (%s)", key, p, strings.Join(known, ", "))
		}
		*set = true
	}
	return nil
}

func appendPhase(phases []Phase, p Phase) []Phase {
	if p == "" || slices.Contains(phases, p) {
		return phases
	}
	return append(phases, p)
}

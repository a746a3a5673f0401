package settings

import (
	"context"
	"encoding/json"
	"slices"
	"sync"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/driftguard/driftguard/api/v1alpha1"
	"github.com/driftguard/driftguard/drift"
	"github.com/driftguard/driftguard/reconcile"
)

// Guards reads per-Guard settings from the manager's cache; ignore rules
// and the spec policies see are made once per Guard generation. Make it
// with NewGuards.
type Guards struct {
	c      client.Reader
	global []*drift.Rule // --ignore-file, for every Guard

	mu    sync.Mutex
	rules map[string]perGeneration
	specs map[string]perGeneration
}

type perGeneration struct {
	generation int64
	rules      []*drift.Rule
	spec       map[string]any // the spec as JSON decodes it, for policies
}

// NewGuards returns the settings of the Guards c reads (the manager's
// client), with the global ignore rules (--ignore-file) added to every
// Guard's.
func NewGuards(c client.Reader, global []*drift.Rule) *Guards {
	if c == nil {
		panic("settings: NewGuards without a client") // a wiring error, never input
	}
	return &Guards{c: c, global: global, rules: map[string]perGeneration{}, specs: map[string]perGeneration{}}
}

// IgnoreRules returns the global ignore rules and the compiled rules of a
// Guard; rules that do not compile are reported by the Guard reconciler and
// left out here.
func (s *Guards) IgnoreRules(guard string) []*drift.Rule {
	g, ok := s.guard(guard)
	if !ok || len(g.Spec.Ignore) == 0 {
		return s.global
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if c, ok := s.rules[guard]; ok && c.generation == g.Generation {
		return c.rules
	}
	own, _ := reconcile.CompileIgnoreRules(g.Spec.Ignore)
	rules := append(slices.Clone(s.global), own...)
	s.rules[guard] = perGeneration{generation: g.Generation, rules: rules}
	return rules
}

// guard reads a Guard, nil when it cannot.
func (s *Guards) guard(name string) (*v1alpha1.Guard, bool) {
	// Read-only, on the drift and admission hot paths: skip the cache's copy.
	var g v1alpha1.Guard
	if err := s.c.Get(context.Background(), client.ObjectKey{Name: name}, &g, client.UnsafeDisableDeepCopy); err != nil {
		return nil, false
	}
	return &g, true
}

// SelfHeal is on unless the Guard turns it off or is suspended.
func (s *Guards) SelfHeal(guard string) bool {
	g, _ := s.guard(guard)
	return selfHeal(g)
}

// Enforcement is the Guard's mode, deny when unset.
func (s *Guards) Enforcement(guard string) string {
	g, _ := s.guard(guard)
	return enforcement(g)
}

// GuardSpec is the Guard's spec as JSON decodes it, made once per
// generation; policies see it as input.guardSpec and must not change it.
func (s *Guards) GuardSpec(guard string) map[string]any {
	g, ok := s.guard(guard)
	if !ok {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if c, ok := s.specs[guard]; ok && c.generation == g.Generation {
		return c.spec
	}
	var spec map[string]any
	if b, err := json.Marshal(g.Spec); err == nil {
		_ = json.Unmarshal(b, &spec) // the JSON the API server served
	}
	s.specs[guard] = perGeneration{generation: g.Generation, spec: spec}
	return spec
}

// PolicyData is the Guard's spec.policyData.
func (s *Guards) PolicyData(guard string) map[string]string {
	if g, ok := s.guard(guard); ok {
		return g.Spec.PolicyData
	}
	return nil
}

// BreakGlassTTL is how long a break-glass change is kept,
// DefaultBreakGlassTTL when unset.
func (s *Guards) BreakGlassTTL(guard string) time.Duration {
	g, _ := s.guard(guard)
	return breakGlassTTL(g)
}

package reconcile

import (
	"context"
	"fmt"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/driftguard/driftguard/api/v1alpha1"
	"github.com/driftguard/driftguard/health"
)

// errDependencyCycle marks a dependsOn cycle: no retry can resolve it.
type errDependencyCycle struct{ path []string }

func (e *errDependencyCycle) Error() string {
	return "spec.dependsOn forms a cycle: " + strings.Join(e.path, " → ")
}

// dependenciesReady returns "" when every Guard g depends on is Ready and
// Healthy at its current generation, or a message naming the first that is
// not. A dependsOn cycle is an *errDependencyCycle.
func dependenciesReady(ctx context.Context, c client.Reader, g *v1alpha1.Guard) (string, error) {
	if len(g.Spec.DependsOn) == 0 {
		return "", nil
	}
	if err := findCycle(ctx, c, g); err != nil {
		return "", err
	}
	for _, name := range g.Spec.DependsOn {
		var dep v1alpha1.Guard
		if err := c.Get(ctx, client.ObjectKey{Name: name}, &dep); err != nil {
			if apierrors.IsNotFound(err) {
				return fmt.Sprintf("dependency %s does not exist", name), nil
			}
			return "", fmt.Errorf("dependency %s: %w", name, err)
		}
		if msg := notReadyMessage(&dep); msg != "" {
			return fmt.Sprintf("dependency %s is not ready: %s", name, msg), nil
		}
	}
	return "", nil
}

// notReadyMessage says why a Guard does not count as ready for the Guards
// that depend on it, "" when it does.
func notReadyMessage(g *v1alpha1.Guard) string {
	ready := meta.FindStatusCondition(g.Status.Conditions, v1alpha1.ConditionReady)
	switch {
	case g.Status.ObservedGeneration != g.Generation:
		return "its spec changed and is not reconciled yet"
	case ready == nil:
		return "not reconciled yet"
	case ready.Status != metav1.ConditionTrue:
		return ready.Reason + ": " + ready.Message
	case g.Status.Health != "" && g.Status.Health != string(health.Healthy):
		return "health " + g.Status.Health
	}
	return ""
}

// findCycle walks dependsOn from g and reports the first cycle through g.
func findCycle(ctx context.Context, c client.Reader, g *v1alpha1.Guard) error {
	var walk func(name string, path []string) error
	seen := map[string]bool{}
	walk = func(name string, path []string) error {
		if name == g.Name && len(path) > 0 {
			return &errDependencyCycle{path: append(path, name)}
		}
		if seen[name] {
			return nil
		}
		seen[name] = true
		deps := g.Spec.DependsOn
		if name != g.Name {
			var dep v1alpha1.Guard
			if err := c.Get(ctx, client.ObjectKey{Name: name}, &dep); err != nil {
				return nil // a missing dependency is reported, not a cycle
			}
			deps = dep.Spec.DependsOn
		}
		for _, d := range deps {
			if err := walk(d, append(path, name)); err != nil {
				return err
			}
		}
		return nil
	}
	return walk(g.Name, nil)
}

package reconcile

import (
	"errors"
	"fmt"
	"os"

	"sigs.k8s.io/yaml"

	"github.com/driftguard/driftguard/api/v1alpha1"
	"github.com/driftguard/driftguard/drift"
)

// CompileIgnoreRules compiles a Guard's ignore rules; errors name each bad rule.
func CompileIgnoreRules(rules []v1alpha1.IgnoreRule) ([]*drift.Rule, error) {
	specs := make([]drift.RuleSpec, len(rules))
	for i, r := range rules {
		specs[i] = drift.RuleSpec(r)
	}
	return drift.CompileRules(specs)
}

// ReadIgnoreFile reads and compiles a YAML list of ignore rules, written as
// in a Guard's spec.ignore. Each bad rule is an error naming the file.
func ReadIgnoreFile(file string) ([]*drift.Rule, error) {
	b, err := os.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("read ignore rules: %w", err)
	}
	var specs []v1alpha1.IgnoreRule
	if err := yaml.UnmarshalStrict(b, &specs); err != nil {
		return nil, fmt.Errorf("%s: a YAML list of ignore rules: %w", file, err)
	}
	rules, err := CompileIgnoreRules(specs)
	if err != nil {
		var errs []error
		for _, e := range drift.RuleErrors(err) {
			errs = append(errs, fmt.Errorf("%s: %w", file, e))
		}
		return nil, errors.Join(errs...)
	}
	return rules, nil
}

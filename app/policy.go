package app

import (
	"context"
	"errors"
	"time"

	"github.com/go-logr/logr"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/driftguard/driftguard/audit"
	"github.com/driftguard/driftguard/policy"
	"github.com/driftguard/driftguard/selfheal"
)

// policyWatchPeriod is how often --policy-dir is read for changes.
const policyWatchPeriod = 2 * time.Second

// newPolicyEngine is the admission policy: the built-in one, or
// --policy-dir's, watched for changes (a policy that does not compile is
// recorded, and the one in force stays). The guard's own writes (self) are
// always allowed.
func newPolicyEngine(mgr manager.Manager, o Options, self string, auditLog *audit.Logger, log logr.Logger) (*policy.Engine, error) {
	engine := policy.NewEngine(policy.Config{GuardUsers: append([]string{self}, o.GuardUsers...), BreakGlassGroups: o.BreakGlassGroups, Timeout: o.PolicyTimeout}, log.WithName("policy"))
	if o.PolicyDir == "" {
		return engine, nil
	}
	engine.OnLoadError(func(err error) {
		auditLog.Log(context.Background(), audit.Record{Type: audit.Error, Operation: "POLICY", Error: err.Error(), Source: &audit.Source{URL: "file://" + o.PolicyDir}})
	})
	if err := engine.LoadDir(o.PolicyDir); err != nil {
		log.Error(err, "policy does not compile; the built-in policy serves until it does", "dir", o.PolicyDir)
	}
	if err := mgr.Add(manager.RunnableFunc(func(ctx context.Context) error {
		engine.Watch(ctx, o.PolicyDir, policyWatchPeriod)
		return nil
	})); err != nil {
		return nil, err
	}
	return engine, nil
}

// onPolicyLoad is told the modules of every policy that loads: the compiled
// layer follows whether it is the default policy, and self-heal takes the
// custom health rules (data.driftguard.health) of the same files.
func onPolicyLoad(layer *compiledLayer, watcher *selfheal.Watcher, log logr.Logger) func(modules map[string]string) {
	return func(modules map[string]string) {
		layer.PolicyLoaded(modules)
		he, err := policy.NewHealthEngine(modules, log.WithName("health"))
		switch {
		case errors.Is(err, policy.ErrNoHealthRule):
			watcher.SetCustomHealth(nil)
		case err != nil:
			log.Error(err, "custom health rules not loaded; the built-in rules apply")
			watcher.SetCustomHealth(nil)
		default:
			log.Info("custom health rules loaded", "revision", he.Revision())
			watcher.SetCustomHealth(he)
		}
	}
}

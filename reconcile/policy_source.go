package reconcile

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"

	"github.com/driftguard/driftguard/api/v1alpha1"
	"github.com/driftguard/driftguard/audit"
	"github.com/driftguard/driftguard/policy"
	"github.com/driftguard/driftguard/source"
)

// PolicySource is the admission policy kept in Git: the Rego files below
// Path in the repository of Guard, at the revision that Guard has in force,
// so a policy change is reviewed, merged and synced like any other.
type PolicySource struct {
	Guard string
	Path  string
	// Load compiles the modules (keys are paths from the repository root)
	// and serves them; on error the last good policy keeps serving.
	Load func(modules map[string]string) error

	mu     sync.Mutex
	loaded string // revision last handled
}

// loadPolicy loads the policy of rev once.
func (r *GuardReconciler) loadPolicy(ctx context.Context, g *v1alpha1.Guard, req source.Request, rev string) {
	p := r.Policy
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.loaded == rev {
		return
	}
	p.loaded = rev
	modules, err := r.Fetcher.Files(req, rev, p.Path, func(name string) bool { return strings.HasSuffix(name, ".rego") })
	if err == nil {
		err = p.Load(modules)
	}
	if err == nil {
		r.event(g, corev1.EventTypeNormal, "PolicyLoaded", fmt.Sprintf("admission policy loaded from %s at %s (%d files)", p.Path, short(rev), len(modules)))
		return
	}
	src := &audit.Source{URL: req.URL, Revision: rev, Path: p.Path}
	var ce *policy.CompileError
	if errors.As(err, &ce) && len(ce.Errors) > 0 {
		src.Path, src.Line = ce.Errors[0].File, ce.Errors[0].Line
	}
	msg := fmt.Sprintf("admission policy at %s of revision %s not loaded, the last good policy keeps serving: %v", p.Path, short(rev), err)
	r.Log.Error(err, "policy from Git not loaded; the last good policy keeps serving", "guard", g.Name, "revision", rev)
	r.event(g, corev1.EventTypeWarning, "PolicyFailed", msg)
	r.record(ctx, audit.Record{Type: audit.Error, Guard: g.Name, Operation: "POLICY", Error: msg, Source: src})
}

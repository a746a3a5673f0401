// Package policy decides, with an OPA Rego policy, what happens to a manual
// change to an object that driftguard manages from Git: deny it, let it
// through and revert it, allow it (break-glass, accepted drift) or warn.
//
// An Engine prepares the query data.driftguard.decision once per policy
// revision and evaluates it per request. A policy that does not compile is
// rejected with an error naming file:line:col and the last good policy keeps
// serving. The package knows nothing about HTTP or Kubernetes clients.
package policy

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/rego"
	"github.com/open-policy-agent/opa/v1/storage"
	"github.com/open-policy-agent/opa/v1/storage/inmem"
	"github.com/open-policy-agent/opa/v1/topdown/print"

	"github.com/driftguard/driftguard/jsonvalue"
)

// DecisionQuery is the query every policy must answer.
const DecisionQuery = "data.driftguard.decision"

var (
	decisionRef   = ast.MustParseRef(DecisionQuery)
	decisionQuery = ast.MustParseBody(DecisionQuery)
)

// Engine evaluates the loaded policy. It is safe for concurrent use: Decide
// never blocks on Load, which swaps a newly prepared policy in atomically.
type Engine struct {
	log     logr.Logger
	store   storage.Store // holds data.driftguard.config; shared by all revisions
	timeout time.Duration // bounds one evaluation

	loadMu      sync.Mutex // serializes Load, LoadDir and Watch
	cur         atomic.Pointer[prepared]
	onLoad      func(modules map[string]string)
	onLoadError func(err error)
}

// OnLoadError sets a function called with the error of every policy that
// fails to load (the last good policy keeps serving).
func (e *Engine) OnLoadError(fn func(err error)) {
	e.loadMu.Lock()
	defer e.loadMu.Unlock()
	e.onLoadError = fn
}

// OnLoad sets a function called with the modules of every policy that
// loads from now on (e.g. to build the custom health rules of the same
// files), and once at once with the modules of the policy in force.
func (e *Engine) OnLoad(fn func(modules map[string]string)) {
	e.loadMu.Lock()
	defer e.loadMu.Unlock()
	e.onLoad = fn
	if p := e.cur.Load(); p != nil && fn != nil {
		fn(p.modules)
	}
}

// prepared is one policy revision, compiled and ready to evaluate.
type prepared struct {
	query    rego.PreparedEvalQuery
	revision string
	modules  map[string]string
}

// NewEngine returns an engine serving the embedded default policy, with cfg
// visible to Rego as data.driftguard.config.
func NewEngine(cfg Config, log logr.Logger) *Engine {
	e := &Engine{
		log:     log,
		store:   inmem.NewFromObjectWithOpts(configData(cfg), inmem.OptReturnASTValuesOnRead(true)),
		timeout: cfg.Timeout,
	}
	if e.timeout <= 0 {
		e.timeout = DefaultTimeout
	}
	if err := e.load(DefaultModules(), "", "default-"); err != nil {
		// The embedded policy is tested; this means a broken build. Decide
		// reports "no policy loaded" until a good policy is loaded.
		log.Error(err, "embedded default policy does not load")
	}
	return e
}

func configData(cfg Config) map[string]any {
	nonNil := func(ss []string) []string {
		if ss == nil {
			return []string{}
		}
		return ss
	}
	return map[string]any{
		"driftguard": map[string]any{
			"config": map[string]any{
				"guardUsers":       nonNil(cfg.GuardUsers),
				"breakGlassGroups": nonNil(cfg.BreakGlassGroups),
			},
		},
	}
}

// Revision names the policy being served: a short sha256 of its sources,
// prefixed "default-" for the embedded policy. It is empty only when no
// policy could be loaded at all.
func (e *Engine) Revision() string {
	if p := e.cur.Load(); p != nil {
		return p.revision
	}
	return ""
}

// Load compiles modules (file name -> Rego source, Rego v1; names ending in
// _test.rego are skipped), prepares data.driftguard.decision and swaps the
// result in. On error the previously loaded policy keeps serving; a policy
// that does not parse or compile yields a *CompileError.
func (e *Engine) Load(modules map[string]string) error {
	return e.load(modules, "", "")
}

// LoadDir loads every *.rego file under dir, recursively, except *_test.rego
// and hidden files and directories (so that the ..data and timestamped
// directories of a mounted ConfigMap are not read twice). Errors name files
// by their path under dir.
func (e *Engine) LoadDir(dir string) error {
	modules, err := readDir(dir)
	if err != nil {
		return err
	}
	return e.load(modules, dir, "")
}

func (e *Engine) load(modules map[string]string, baseDir, revPrefix string) error {
	e.loadMu.Lock()
	defer e.loadMu.Unlock()
	err := e.compile(modules, baseDir, revPrefix)
	if err != nil {
		policyLoads.WithLabelValues("failed").Inc()
		if e.onLoadError != nil {
			e.onLoadError(err)
		}
		return err
	}
	policyLoads.WithLabelValues("loaded").Inc()
	return nil
}

// errNoDecisionRule is wrapped by the error of a policy without a decision.
var errNoDecisionRule = errors.New("no rule defines " + DecisionQuery + " (package driftguard, rule decision)")

// compile parses, compiles and prepares modules and swaps them in.
func (e *Engine) compile(modules map[string]string, baseDir, revPrefix string) error {
	ctx := context.Background()
	compiler, names, err := compile(ctx, unit{
		what: "policy", files: "Rego policy files", modules: modules, baseDir: baseDir,
		store: e.store, rule: decisionRef, errNoRule: errNoDecisionRule,
	})
	if err != nil {
		return err
	}

	revision := revPrefix + sourceHash(modules, names)
	pq, err := rego.New(
		rego.ParsedQuery(decisionQuery),
		rego.Compiler(compiler),
		rego.Capabilities(compiler.Capabilities()),
		rego.Store(e.store),
		rego.EnablePrintStatements(true),
		rego.PrintHook(printHook{log: e.log, revision: revision}),
	).PrepareForEval(ctx)
	if err != nil {
		return fmt.Errorf("load policy %s: prepare %s: %w", revision, DecisionQuery, err)
	}

	prev := e.cur.Swap(&prepared{query: pq, revision: revision, modules: modules})
	if e.onLoad != nil {
		e.onLoad(modules)
	}
	kv := []any{"revision", revision, "modules", len(names)}
	if baseDir != "" {
		kv = append(kv, "dir", baseDir)
	}
	if prev != nil {
		kv = append(kv, "previous", prev.revision)
	}
	e.log.Info("policy loaded", kv...)
	return nil
}

// parseErrors makes sure every parse error of module name carries a location.
func parseErrors(name string, err error) ast.Errors {
	var errs ast.Errors
	var one *ast.Error
	switch {
	case errors.As(err, &errs):
	case errors.As(err, &one):
		errs = ast.Errors{one}
	default:
		errs = ast.Errors{ast.NewError(ast.ParseErr, nil, "%v", err)}
	}
	for _, e := range errs {
		if e.Location == nil {
			e.Location = &ast.Location{}
		}
		if e.Location.File == "" {
			e.Location.File = name
		}
		if e.Location.Row == 0 { // e.g. "empty module": point at the top of the file
			e.Location.Row, e.Location.Col = 1, 1
		}
	}
	return errs
}

// policyNames returns the sorted module names that are not tests.
func policyNames(modules map[string]string) []string {
	names := make([]string, 0, len(modules))
	for name := range modules {
		if !isTestFile(name) {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	return names
}

func isTestFile(name string) bool { return strings.HasSuffix(name, "_test.rego") }

// sourceHash is a short, stable digest of the named modules.
func sourceHash(modules map[string]string, names []string) string {
	h := sha256.New()
	for _, name := range names {
		h.Write([]byte(name))
		h.Write([]byte{0})
		h.Write([]byte(modules[name]))
		h.Write([]byte{0})
	}
	return hex.EncodeToString(h.Sum(nil))[:12]
}

// readDir reads the non-test policy files under dir, keyed by slash path
// relative to dir.
func readDir(dir string) (map[string]string, error) {
	modules := map[string]string{}
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if path != dir && strings.HasPrefix(d.Name(), ".") {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		if d.IsDir() || !strings.HasSuffix(d.Name(), ".rego") || isTestFile(d.Name()) {
			return nil
		}
		fi, err := os.Stat(path) // follows symlinks, as in a mounted ConfigMap
		if err != nil {
			return err
		}
		if !fi.Mode().IsRegular() {
			return nil
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(dir, path)
		if err != nil {
			return err
		}
		modules[filepath.ToSlash(rel)] = string(src)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("read policy dir %s: %w", dir, err)
	}
	return modules, nil
}

// Decide evaluates the loaded policy for in. It returns an error, naming the
// policy revision, when the policy fails, yields no decision, several, or one
// of the wrong shape; it does not panic. The policy sees the URLs of in
// without credentials (see withoutCredentials).
func (e *Engine) Decide(ctx context.Context, in Input) (d Decision, err error) {
	p := e.cur.Load()
	if p == nil {
		return Decision{}, errors.New("policy: no policy loaded")
	}
	if err := ctx.Err(); err != nil {
		return Decision{}, fmt.Errorf("policy %s: %w", p.revision, err)
	}
	defer func() {
		if r := recover(); r != nil {
			d, err = Decision{}, fmt.Errorf("policy %s: evaluation panicked: %v", p.revision, r)
		}
	}()
	in = withoutCredentials(in)
	val, err := inputValue(&in)
	if err != nil {
		return Decision{}, fmt.Errorf("policy %s: convert input: %w", p.revision, err)
	}
	// The evaluation checks for cancellation as it goes, so the bound
	// holds for a policy that loops over large ranges.
	evalCtx, cancel := context.WithTimeoutCause(ctx, e.timeout, ErrTimeout)
	defer cancel()
	rs, err := p.query.Eval(evalCtx, rego.EvalParsedInput(val))
	if err != nil {
		if errors.Is(context.Cause(evalCtx), ErrTimeout) {
			return Decision{}, fmt.Errorf("policy %s: evaluate %s: %w after %s", p.revision, DecisionQuery, ErrTimeout, e.timeout)
		}
		return Decision{}, fmt.Errorf("policy %s: evaluate %s: %w", p.revision, DecisionQuery, err)
	}
	d, err = decisionFrom(rs)
	if err != nil {
		return Decision{}, fmt.Errorf("policy %s: %w", p.revision, err)
	}
	return d, nil
}

func decisionFrom(rs rego.ResultSet) (Decision, error) {
	switch {
	case len(rs) == 0 || len(rs[0].Expressions) == 0:
		return Decision{}, fmt.Errorf("no decision: %s is undefined for this input", DecisionQuery)
	case len(rs) > 1 || len(rs[0].Expressions) > 1:
		return Decision{}, fmt.Errorf("several decisions: %s yielded %d results", DecisionQuery, len(rs))
	}
	switch v := rs[0].Expressions[0].Value.(type) {
	case map[string]any:
		return decisionFromObject(v)
	case []any:
		if len(v) == 0 {
			return Decision{}, fmt.Errorf("no decision: %s is an empty collection", DecisionQuery)
		}
		return Decision{}, fmt.Errorf("several decisions: %s is a collection of %d values, want one object", DecisionQuery, len(v))
	default:
		return Decision{}, fmt.Errorf("wrong shape: %s is %s, want an object {\"action\", \"reason\"}", DecisionQuery, jsonvalue.Kind(v))
	}
}

func decisionFromObject(obj map[string]any) (Decision, error) {
	raw, ok := obj["action"]
	if !ok {
		return Decision{}, fmt.Errorf("wrong shape: %s has no action", DecisionQuery)
	}
	s, ok := raw.(string)
	if !ok {
		return Decision{}, fmt.Errorf("wrong shape: %s action is %s, want a string", DecisionQuery, jsonvalue.Kind(raw))
	}
	d := Decision{Action: Action(s)}
	if !d.Action.Valid() {
		return Decision{}, fmt.Errorf("wrong shape: %s has unknown action %q (want deny, revert, allow or warn)", DecisionQuery, s)
	}
	for key, dst := range map[string]*string{"reason": &d.Reason, "rule": &d.Rule} {
		raw, ok := obj[key]
		if !ok {
			continue
		}
		s, ok := raw.(string)
		if !ok {
			return Decision{}, fmt.Errorf("wrong shape: %s %s is %s, want a string", DecisionQuery, key, jsonvalue.Kind(raw))
		}
		*dst = s
	}
	if raw, ok := obj["temporary"]; ok {
		b, ok := raw.(bool)
		if !ok {
			return Decision{}, fmt.Errorf("wrong shape: %s temporary is %s, want a boolean", DecisionQuery, jsonvalue.Kind(raw))
		}
		d.Temporary = b
	}
	return d, nil
}

// Watch polls dir every interval (10s when every <= 0) until ctx is done.
// When the policy files change, and have stayed the same for one more poll
// (so that a file caught half-written is not loaded), it loads them as
// LoadDir does; errors are logged once per distinct content and the last
// good policy keeps serving. It blocks; run it in a goroutine.
func (e *Engine) Watch(ctx context.Context, dir string, every time.Duration) {
	if every <= 0 {
		every = 10 * time.Second
	}
	log := e.log.WithValues("dir", dir)
	var (
		handled = e.Revision() // equal to the dir's hash if LoadDir(dir) already ran
		pending string         // content seen on the previous poll, not yet handled
	)
	check := func() {
		modules, err := readDir(dir)
		seen := "error: "
		if err == nil {
			seen = sourceHash(modules, policyNames(modules))
		} else {
			seen += err.Error()
		}
		if seen == handled {
			pending = ""
			return
		}
		if seen != pending {
			pending = seen
			return
		}
		handled, pending = seen, ""
		if err == nil {
			err = e.load(modules, dir, "")
		}
		if err != nil {
			log.Error(err, "policy not loaded; keeping the last good policy", "revision", e.Revision())
		}
	}
	check()
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			check()
		}
	}
}

// printHook sends Rego print() output to the log at V(1).
type printHook struct {
	log      logr.Logger
	revision string
}

func (h printHook) Print(pctx print.Context, msg string) error {
	kv := []any{"revision", h.revision, "msg", msg}
	if pctx.Location != nil {
		kv = append(kv, "location", pctx.Location.String())
	}
	h.log.V(1).Info("policy print", kv...)
	return nil
}

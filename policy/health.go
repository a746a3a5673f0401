package policy

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/go-logr/logr"
	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/rego"
	"github.com/open-policy-agent/opa/v1/storage/inmem"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/driftguard/driftguard/health"
	"github.com/driftguard/driftguard/jsonvalue"
)

// HealthQuery is the rule custom health checks define.
const HealthQuery = "data.driftguard.health"

var (
	healthRef   = ast.MustParseRef(HealthQuery)
	healthQuery = ast.MustParseBody(HealthQuery)
)

// ErrNoHealthRule is returned (wrapped) by NewHealthEngine and
// LoadHealthDir when the modules compile but define no health rule.
var ErrNoHealthRule = errors.New("no rule defines " + HealthQuery + " (package driftguard, rule health)")

// HealthEngine evaluates custom health rules written in Rego: with input
// {"object": <the live object>}, data.driftguard.health is either undefined
// (the built-in assessment applies) or {"state": "<State>", "message": "..."}.
// It implements health.Custom and is safe for concurrent use. The modules
// are compiled and the query prepared once, by the constructor.
type HealthEngine struct {
	query    rego.PreparedEvalQuery
	revision string
}

var _ health.Custom = (*HealthEngine)(nil)

// NewHealthEngine compiles modules (file name -> Rego source, Rego v1;
// names ending in _test.rego are skipped). A module set that does not parse
// or compile yields a *CompileError naming file:line:col; one without a
// health rule, an error wrapping ErrNoHealthRule. The modules may hold the
// decision rule too.
func NewHealthEngine(modules map[string]string, log logr.Logger) (*HealthEngine, error) {
	return newHealthEngine(modules, "", log)
}

// LoadHealthDir is NewHealthEngine with the *.rego files under dir, read as
// Engine.LoadDir reads them; errors name files by their path under dir.
func LoadHealthDir(dir string, log logr.Logger) (*HealthEngine, error) {
	modules, err := readDir(dir)
	if err != nil {
		return nil, err
	}
	return newHealthEngine(modules, dir, log)
}

func newHealthEngine(modules map[string]string, baseDir string, log logr.Logger) (*HealthEngine, error) {
	// The data health rules see, and may not conflict with, is the
	// policy's (data.driftguard.config), with no guard users or groups:
	// the rules are often the policy's own files.
	store := inmem.NewFromObjectWithOpts(configData(Config{}), inmem.OptReturnASTValuesOnRead(true))
	compiler, names, err := compile(context.Background(), unit{
		what: "health rules", files: "Rego files", modules: modules, baseDir: baseDir,
		store: store, rule: healthRef, errNoRule: ErrNoHealthRule,
	})
	if err != nil {
		return nil, err
	}
	revision := sourceHash(modules, names)
	pq, err := rego.New(
		rego.ParsedQuery(healthQuery),
		rego.Compiler(compiler),
		rego.Capabilities(compiler.Capabilities()),
		rego.Store(store),
		rego.StrictBuiltinErrors(true),
		rego.EnablePrintStatements(true),
		rego.PrintHook(printHook{log: log, revision: revision}),
	).PrepareForEval(context.Background())
	if err != nil {
		return nil, fmt.Errorf("load health rules %s: prepare %s: %w", revision, HealthQuery, err)
	}
	log.Info("health rules loaded", "revision", revision, "modules", len(names))
	return &HealthEngine{query: pq, revision: revision}, nil
}

// Revision is a short sha256 of the rules' sources.
func (h *HealthEngine) Revision() string { return h.revision }

// Health evaluates data.driftguard.health for obj. It returns false when the
// rule is undefined for obj, and an error, naming the revision, when the
// evaluation fails (a conflict between rules, a builtin error) or the rule
// yields a value of the wrong shape or an unknown state. A nil engine has no
// opinion about anything.
func (h *HealthEngine) Health(ctx context.Context, obj *unstructured.Unstructured) (r health.Result, ok bool, err error) {
	if h == nil || obj == nil {
		return health.Result{}, false, nil
	}
	defer func() {
		if p := recover(); p != nil {
			r, ok, err = health.Result{}, false, fmt.Errorf("health rules %s: evaluation panicked: %v", h.revision, p)
		}
	}()
	v, err := toValue(obj.Object, 0)
	if err != nil {
		return health.Result{}, false, fmt.Errorf("health rules %s: convert input.object: %w", h.revision, err)
	}
	input := ast.NewObject([2]*ast.Term{ast.StringTerm("object"), ast.NewTerm(v)})
	rs, err := h.query.Eval(ctx, rego.EvalParsedInput(input))
	if err != nil {
		return health.Result{}, false, fmt.Errorf("health rules %s: evaluate %s: %w", h.revision, HealthQuery, err)
	}
	r, ok, err = healthFrom(rs)
	if err != nil {
		return health.Result{}, false, fmt.Errorf("health rules %s: %w", h.revision, err)
	}
	return r, ok, nil
}

func healthFrom(rs rego.ResultSet) (health.Result, bool, error) {
	switch {
	case len(rs) == 0 || len(rs[0].Expressions) == 0:
		return health.Result{}, false, nil
	case len(rs) > 1 || len(rs[0].Expressions) > 1:
		return health.Result{}, false, fmt.Errorf("wrong shape: %s yielded %d results, want one object", HealthQuery, len(rs))
	}
	obj, ok := rs[0].Expressions[0].Value.(map[string]any)
	if !ok {
		v := rs[0].Expressions[0].Value
		return health.Result{}, false, fmt.Errorf(`wrong shape: %s is %s, want an object {"state", "message"}`, HealthQuery, jsonvalue.Kind(v))
	}
	keys := make([]string, 0, len(obj))
	for k := range obj {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var r health.Result
	for _, k := range keys {
		v := obj[k]
		s, isString := v.(string)
		switch k {
		case "state":
			if !isString {
				return health.Result{}, false, fmt.Errorf("wrong shape: %s state is %s, want a string", HealthQuery, jsonvalue.Kind(v))
			}
			r.State = health.State(s)
		case "message":
			if !isString {
				return health.Result{}, false, fmt.Errorf("wrong shape: %s message is %s, want a string", HealthQuery, jsonvalue.Kind(v))
			}
			r.Message = s
		default:
			return health.Result{}, false, fmt.Errorf("wrong shape: %s has unknown key %q (want state and message)", HealthQuery, k)
		}
	}
	if _, set := obj["state"]; !set {
		return health.Result{}, false, fmt.Errorf("wrong shape: %s has no state", HealthQuery)
	}
	if !r.State.Valid() {
		want := make([]string, len(health.States))
		for i, s := range health.States {
			want[i] = string(s)
		}
		return health.Result{}, false, fmt.Errorf("wrong shape: %s has unknown state %q (want %s)", HealthQuery, r.State, strings.Join(want, ", "))
	}
	return r, true, nil
}

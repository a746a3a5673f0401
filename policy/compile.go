package policy

import (
	"context"
	"fmt"
	"path/filepath"

	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/storage"
)

// unit is one set of Rego modules to compile: the policy, or the custom
// health rules (often the same files).
type unit struct {
	// what names the unit in errors: "policy" or "health rules"; files
	// the files it is read from: "Rego policy files" or "Rego files".
	what, files string
	// modules maps file names to Rego sources (Rego v1); *_test.rego are
	// skipped.
	modules map[string]string
	// baseDir, when the modules were read from a folder, is joined to file
	// names in errors.
	baseDir string
	// store holds the data the modules are evaluated with; rules may not
	// conflict with it (data.driftguard.config).
	store storage.Store
	// rule must be defined (data.driftguard.decision or .health); errNoRule
	// is wrapped when it is not.
	rule      ast.Ref
	errNoRule error
}

// compile parses and compiles u's modules the one way the guard and its
// tools do: Rego v1, print() enabled, the builtins of Capabilities, and no
// rule conflicting with the data in u.store. It returns the compiler and
// the sorted names of the modules compiled. A module that does not parse
// or compile yields a *CompileError naming file:line:col.
func compile(ctx context.Context, u unit) (*ast.Compiler, []string, error) {
	display := func(name string) string {
		if u.baseDir == "" || name == "" {
			return name
		}
		return filepath.Join(u.baseDir, filepath.FromSlash(name))
	}
	where := "the given modules"
	if u.baseDir != "" {
		where = u.baseDir
	}

	names := policyNames(u.modules)
	if len(names) == 0 {
		return nil, nil, fmt.Errorf("load %s: no %s (other than *_test.rego) in %s", u.what, u.files, where)
	}
	parsed := make(map[string]*ast.Module, len(names))
	var parseErrs ast.Errors
	opts := ast.ParserOptions{RegoVersion: ast.RegoV1, ProcessAnnotation: true}
	for _, name := range names {
		m, err := ast.ParseModuleWithOpts(name, u.modules[name], opts)
		if err != nil {
			parseErrs = append(parseErrs, parseErrors(name, err)...)
			continue
		}
		if m == nil { // only comments or whitespace
			parseErrs = append(parseErrs, &ast.Error{
				Code:     ast.ParseErr,
				Message:  "empty module: a policy file needs a package declaration",
				Location: &ast.Location{File: name, Row: 1, Col: 1},
			})
			continue
		}
		parsed[name] = m
	}
	if len(parseErrs) > 0 {
		return nil, nil, compileErrorFrom(parseErrs, display)
	}

	txn, err := u.store.NewTransaction(ctx)
	if err != nil {
		return nil, nil, fmt.Errorf("load %s: open store transaction: %w", u.what, err)
	}
	defer u.store.Abort(ctx, txn)

	compiler := newCompiler().WithPathConflictsCheck(storage.NonEmpty(ctx, u.store, txn))
	if compiler.Compile(parsed); compiler.Failed() {
		return nil, nil, compileErrorFrom(compiler.Errors, display)
	}
	if len(compiler.GetRules(u.rule)) == 0 {
		return nil, nil, fmt.Errorf("load %s from %s: %w", u.what, where, u.errNoRule)
	}
	return compiler, names, nil
}

// newCompiler is a compiler with the settings every policy and health rule,
// and `driftguard policy test`, compile with.
func newCompiler() *ast.Compiler {
	return ast.NewCompiler().
		WithDefaultRegoVersion(ast.RegoV1).
		WithEnablePrintStatements(true).
		WithCapabilities(Capabilities())
}

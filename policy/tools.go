package policy

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/go-logr/logr"
	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/tester"
	"github.com/open-policy-agent/opa/v1/topdown"
	"sigs.k8s.io/yaml"
)

// Test runs the Rego unit tests (rules named test_*) of the policy in dir, as
// `opa test` does, and writes one PASS, FAIL, ERROR or SKIP line per test and
// a summary to w. verbose adds print() output and, for failures, a trace.
// Data files in dir (data.json, data.yaml) are loaded as with `opa test`.
// err is set when the policy does not load or compile, when w fails, or when
// dir holds no tests; failing tests only count in failed.
func Test(ctx context.Context, dir string, w io.Writer, verbose bool) (passed, failed int, err error) {
	results, err := runTests(ctx, dir, verbose)
	if err != nil {
		return 0, 0, err
	}
	var out bytes.Buffer
	passed, failed, skipped := reportTests(&out, results, verbose)
	total := passed + failed
	if total == 0 && skipped == 0 {
		fmt.Fprintf(&out, "no tests (rules named test_*) found in %s\n", dir)
		if _, werr := w.Write(out.Bytes()); werr != nil {
			return 0, 0, fmt.Errorf("policy test: write report: %w", werr)
		}
		return 0, 0, fmt.Errorf("policy test: no tests found in %s", dir)
	}
	fmt.Fprintln(&out, strings.Repeat("-", 60))
	verdict := "PASS"
	if failed > 0 {
		verdict = "FAIL"
	}
	fmt.Fprintf(&out, "%s: %d/%d", verdict, passed, total)
	if skipped > 0 {
		fmt.Fprintf(&out, " (%d skipped)", skipped)
	}
	out.WriteByte('\n')
	if _, werr := w.Write(out.Bytes()); werr != nil {
		return passed, failed, fmt.Errorf("policy test: write report: %w", werr)
	}
	return passed, failed, nil
}

// runTests loads the policy and data in dir and runs its tests, sorted by
// package and name.
func runTests(ctx context.Context, dir string, verbose bool) ([]*tester.Result, error) {
	skipHidden := func(_ string, info fs.FileInfo, depth int) bool {
		return depth > 0 && strings.HasPrefix(info.Name(), ".")
	}
	modules, store, err := tester.LoadWithRegoVersion([]string{dir}, skipHidden, ast.RegoV1)
	if err != nil {
		return nil, fmt.Errorf("policy test: load %s: %w", dir, err)
	}
	txn, err := store.NewTransaction(ctx)
	if err != nil {
		return nil, fmt.Errorf("policy test: open store transaction: %w", err)
	}
	defer store.Abort(ctx, txn)

	runner := tester.NewRunner().
		SetCompiler(newCompiler()). // the guard's capabilities: a denied builtin fails here too
		SetDefaultRegoVersion(ast.RegoV1).
		SetStore(store).
		SetModules(modules).
		CapturePrintOutput(true).
		EnableTracing(verbose)
	ch, err := runner.RunTests(ctx, txn)
	if err != nil {
		var astErrs ast.Errors
		if errors.As(err, &astErrs) {
			return nil, fmt.Errorf("policy test %s: %w", dir, compileErrorFrom(astErrs, func(s string) string { return s }))
		}
		return nil, fmt.Errorf("policy test %s: %w", dir, err)
	}
	var results []*tester.Result
	for r := range ch {
		results = append(results, r)
	}
	slices.SortFunc(results, func(a, b *tester.Result) int {
		return strings.Compare(a.Package+"."+a.Name, b.Package+"."+b.Name)
	})
	return results, nil
}

// reportTests writes one line per test result to out (with verbose, its
// print() output and, for a failure, its trace) and counts them.
func reportTests(out *bytes.Buffer, results []*tester.Result, verbose bool) (passed, failed, skipped int) {
	for _, r := range results {
		name := r.Package + "." + r.Name
		switch {
		case r.Skip:
			skipped++
			fmt.Fprintf(out, "SKIP  %s\n", name)
			continue
		case r.Error != nil:
			failed++
			fmt.Fprintf(out, "ERROR %s: %v\n", name, r.Error)
		case r.Fail:
			failed++
			fmt.Fprintf(out, "FAIL  %s", name)
			if r.Location != nil {
				fmt.Fprintf(out, " (%s)", r.Location)
			}
			out.WriteByte('\n')
		default:
			passed++
			fmt.Fprintf(out, "PASS  %s", name)
			if verbose {
				fmt.Fprintf(out, " (%s)", r.Duration)
			}
			out.WriteByte('\n')
		}
		if verbose && len(r.Output) > 0 {
			writeIndented(out, string(r.Output))
		}
		if verbose && r.Fail && len(r.Trace) > 0 {
			var tr bytes.Buffer
			topdown.PrettyTraceWithLocation(&tr, r.Trace)
			writeIndented(out, tr.String())
		}
	}
	return passed, failed, skipped
}

func writeIndented(b *bytes.Buffer, s string) {
	for line := range strings.SplitSeq(strings.TrimRight(s, "\n"), "\n") {
		b.WriteString("      ")
		b.WriteString(line)
		b.WriteByte('\n')
	}
}

// EvalFile evaluates the input in inputFile (JSON or YAML, shaped as Input)
// against the policy in policyDir ("" for the embedded default) and returns
// its decision. It runs with an empty Config (no guard users, no break-glass
// groups); to evaluate with a config, use ReadInput with an Engine.
func EvalFile(ctx context.Context, policyDir, inputFile string) (Decision, error) {
	in, err := ReadInput(inputFile)
	if err != nil {
		return Decision{}, err
	}
	e := NewEngine(Config{}, logr.Discard())
	if policyDir != "" {
		if err := e.LoadDir(policyDir); err != nil {
			return Decision{}, err
		}
	}
	return e.Decide(ctx, in)
}

// ReadInput reads an Input from a JSON or YAML file. Unknown fields are an
// error naming the field.
func ReadInput(file string) (Input, error) {
	raw, err := os.ReadFile(file)
	if err != nil {
		return Input{}, fmt.Errorf("read input: %w", err)
	}
	if len(bytes.TrimSpace(raw)) == 0 {
		return Input{}, fmt.Errorf("read input %s: file is empty", file)
	}
	js, err := yaml.YAMLToJSON(raw)
	if err != nil {
		return Input{}, fmt.Errorf("read input %s: %w", file, err)
	}
	dec := json.NewDecoder(bytes.NewReader(js))
	dec.DisallowUnknownFields()
	dec.UseNumber()
	var in Input
	if err := dec.Decode(&in); err != nil {
		return Input{}, fmt.Errorf("read input %s: %w", file, err)
	}
	return in, nil
}

// Bundles returns the policies below dir that are tested on their own: dir
// itself when it holds Rego files, otherwise every folder below it that
// does (a folder of alternative policies, each a package driftguard of its
// own, which loaded together would conflict). Hidden folders are skipped.
func Bundles(dir string) ([]string, error) {
	var out []string
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && path != dir && strings.HasPrefix(d.Name(), ".") {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(d.Name(), ".rego") {
			return nil
		}
		folder := filepath.Dir(path)
		if len(out) == 0 || out[len(out)-1] != folder {
			out = append(out, folder)
		}
		if folder == dir {
			return filepath.SkipAll // a policy of its own: test it whole
		}
		return filepath.SkipDir // the rest of this folder is the same bundle
	})
	if err != nil {
		return nil, fmt.Errorf("policy test: %w", err)
	}
	if slices.Contains(out, dir) {
		return []string{dir}, nil
	}
	return out, nil
}

package policy

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/open-policy-agent/opa/v1/ast"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// FuzzLoadPolicy loads a Rego file as one committed to the policy folder
// of a Guard's repository (--policy-git) is loaded, as the admission
// policy and as custom health rules. A file that does not load leaves the
// policy that served before serving, unchanged; one that loads calls no
// denied builtin (no network, no clock, no randomness, no environment),
// and its evaluation ends within the evaluation timeout.
func FuzzLoadPolicy(f *testing.F) {
	for _, src := range DefaultModules() {
		f.Add(src)
	}
	f.Add("package driftguard\n\ndecision := {\"action\": \"allow\", \"reason\": \"ok\"}\n")
	f.Add("package driftguard\n\ndecision := {\"action\": \"deny\", \"reason\": http.send({\"method\": \"GET\", \"url\": \"http://169.254.169.254/\"}).body}\n")
	f.Add("package driftguard\n\ndecision := {\"action\": \"allow\", \"reason\": sprintf(\"%d\", [time.now_ns()])}\n")
	f.Add("package driftguard\n\ndecision := {\"action\": \"allow\", \"reason\": opa.runtime().env.HOME}\n")
	f.Add("package driftguard\n\nf(x) := http.send(x)\ndecision := {\"action\": \"allow\", \"reason\": f({})}\n")
	f.Add("package driftguard\n\ndecision := {\"action\": \"allow\", \"reason\": \"x\"} if {\n\tsome i in numbers.range(0, 100000000)\n\ti < 0\n}\n")
	f.Add("package driftguard\n\nimport rego.v1\n\nconfig := 1\ndecision := data.driftguard.config\n")
	f.Add("package driftguard.health\n\nhealth := {\"status\": \"Healthy\", \"message\": input.kind} if input.kind == \"ConfigMap\"\n")
	f.Add("package driftguard\n\ndecision := x if { x := {\"action\": \"warn\", \"reason\": json.marshal(input)}; trace(\"t\") }\n")
	f.Add("package x\n# only a comment\n")
	f.Add("")

	denied := map[string]bool{}
	for _, d := range DeniedBuiltins() {
		denied[d[0]] = true
	}
	in := Input{Operation: "UPDATE", User: User{Username: "alice", Groups: []string{"dev"}},
		Resource: Resource{Kind: "Deployment", Name: "web"},
		Object:   map[string]any{"spec": map[string]any{"replicas": 5}},
		Drift:    []Change{{Path: "/spec/replicas", Desired: 3, Live: 5}}}
	cm := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "cm"}}}
	const timeout = time.Second
	ctx := context.Background()

	f.Fuzz(func(t *testing.T, src string) {
		e := NewEngine(Config{GuardUsers: []string{guardSA}, Timeout: timeout}, logr.Discard())
		before := e.Revision()
		want, wantErr := e.Decide(ctx, in)
		if wantErr != nil && !errors.Is(wantErr, ErrTimeout) {
			t.Fatalf("default policy: %v", wantErr)
		}
		modules := map[string]string{"policies/fuzz.rego": src}
		if err := e.Load(modules); err != nil {
			if e.Revision() != before {
				t.Fatalf("a policy that did not load replaced %s by %s", before, e.Revision())
			}
			// (A machine too busy to evaluate within the timeout is no
			// finding.)
			if got, err := e.Decide(ctx, in); (err != nil && !errors.Is(err, ErrTimeout)) || (err == nil && wantErr == nil && got != want) {
				t.Fatalf("after a failed load the policy decides %+v (%v), before %+v", got, err, want)
			}
		} else {
			checkNoDenied(t, src, denied)
			if e.Revision() == before {
				t.Fatalf("a loaded policy still serves as %s", before)
			}
			start := time.Now()
			d, err := e.Decide(ctx, in)
			if took := time.Since(start); took > timeout+5*time.Second {
				t.Fatalf("evaluation took %s, timeout %s", took, timeout)
			}
			if err == nil && !d.Action.Valid() {
				t.Fatalf("decided %+v", d)
			}
			if err != nil && strings.Contains(err.Error(), "panicked") {
				t.Fatalf("evaluation panicked: %v", err)
			}
		}

		h, err := NewHealthEngine(modules, logr.Discard())
		if err != nil {
			var ce *CompileError
			if errors.As(err, &ce) {
				for _, e := range ce.Errors {
					if e.File == "" {
						t.Fatalf("compile error without a file: %v", err)
					}
				}
			}
			return
		}
		checkNoDenied(t, src, denied)
		hctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		defer cancel()
		start := time.Now()
		_, _, err = h.Health(hctx, cm)
		if err != nil && strings.Contains(err.Error(), "panicked") {
			t.Fatalf("health rule panicked: %v", err)
		}
		if took := time.Since(start); took > 7*time.Second {
			t.Fatalf("health rule took %s with a 2s deadline", took)
		}
	})
}

// checkNoDenied fails when src, which loaded, calls a denied builtin.
func checkNoDenied(t *testing.T, src string, denied map[string]bool) {
	t.Helper()
	m, err := ast.ParseModuleWithOpts("fuzz.rego", src, ast.ParserOptions{RegoVersion: ast.RegoV1})
	if err != nil || m == nil {
		t.Fatalf("loaded, but does not parse: %v", err)
	}
	ast.WalkExprs(m, func(x *ast.Expr) bool {
		if x.IsCall() && denied[x.Operator().String()] {
			t.Fatalf("a policy calling %s loaded", x.Operator())
		}
		return false
	})
	ast.WalkTerms(m, func(x *ast.Term) bool {
		if call, ok := x.Value.(ast.Call); ok && len(call) > 0 && denied[call[0].String()] {
			t.Fatalf("a policy calling %s loaded", call[0])
		}
		return false
	})
}

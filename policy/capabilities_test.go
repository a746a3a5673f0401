package policy

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/go-logr/logr"
	"github.com/open-policy-agent/opa/v1/ast"
)

// TestDeniedBuiltinsDoNotLoad: a policy, a health rule or a policy test
// that calls a network or non-deterministic builtin does not compile, with
// an error naming the builtin and file:line; the builtin never runs.
func TestDeniedBuiltinsDoNotLoad(t *testing.T) {
	var hits atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		_, _ = w.Write([]byte(`{"action": "allow", "reason": "from the network"}`))
	}))
	t.Cleanup(srv.Close)

	tests := []struct {
		builtin string
		call    string // a Rego expression calling it
	}{
		{"http.send", `http.send({"method": "GET", "url": "` + srv.URL + `"}).body`},
		{"net.lookup_ip_addr", `net.lookup_ip_addr("localhost")`},
		{"opa.runtime", `opa.runtime().env`},
		{"time.now_ns", `time.now_ns()`},
		{"rand.intn", `rand.intn("x", 10)`},
		{"uuid.rfc4122", `uuid.rfc4122("x")`},
		{"io.jwt.decode_verify", `io.jwt.decode_verify("a.b.c", {"secret": "s"})`},
		{"io.jwt.encode_sign", `io.jwt.encode_sign({"alg": "HS256"}, {}, {"kty": "oct", "k": "c2VjcmV0"})`},
		{"json.verify_schema", `json.verify_schema({"$ref": "` + srv.URL + `/schema.json"})`},
		{"json.match_schema", `json.match_schema({}, {"$ref": "` + srv.URL + `/schema.json"})`},
		{"trace", `trace("x")`},
		{"crypto.x509.parse_and_verify_certificates", `crypto.x509.parse_and_verify_certificates("")`},
		{"crypto.x509.parse_and_verify_certificates_with_options", `crypto.x509.parse_and_verify_certificates_with_options("", {})`},
	}
	for _, tt := range tests {
		t.Run(tt.builtin, func(t *testing.T) {
			// Line 5 calls the builtin, in the policy and in the health rule.
			policySrc := "package driftguard\n\nimport rego.v1\n\nx := " + tt.call + "\n\ndecision := {\"action\": \"allow\", \"reason\": sprintf(\"%v\", [x])}\n"
			healthSrc := "package driftguard\n\nimport rego.v1\n\nx := " + tt.call + "\n\nhealth := {\"state\": \"Healthy\", \"message\": sprintf(\"%v\", [x])}\n"
			testSrc := "package driftguard_test\n\nimport rego.v1\n\ntest_x if {\n\t" + tt.call + "\n}\n"

			wantSource := func(t *testing.T, err error, file string, line int) {
				t.Helper()
				var ce *CompileError
				if !errors.As(err, &ce) {
					t.Fatalf("error %v (%T), want a *CompileError", err, err)
				}
				for _, se := range ce.Errors {
					if se.File == file && se.Line == line && strings.Contains(se.Message, "builtin "+tt.builtin+" is not allowed") {
						return
					}
				}
				t.Fatalf("error %v does not name builtin %s at %s:%d", err, tt.builtin, file, line)
			}

			t.Run("policy", func(t *testing.T) {
				e := NewEngine(testConfig, logr.Discard())
				before := e.Revision()
				wantSource(t, e.Load(map[string]string{"net.rego": policySrc}), "net.rego", 5)
				if e.Revision() != before {
					t.Fatalf("revision %s after a refused policy, want %s", e.Revision(), before)
				}
			})
			t.Run("policy dir", func(t *testing.T) {
				dir := t.TempDir()
				writeFile(t, filepath.Join(dir, "net.rego"), policySrc)
				wantSource(t, NewEngine(testConfig, logr.Discard()).LoadDir(dir), filepath.Join(dir, "net.rego"), 5)
			})
			t.Run("health rule", func(t *testing.T) {
				_, err := NewHealthEngine(map[string]string{"health.rego": healthSrc}, logr.Discard())
				wantSource(t, err, "health.rego", 5)
			})
			t.Run("policy test", func(t *testing.T) {
				dir := t.TempDir()
				writeFile(t, filepath.Join(dir, "decision.rego"), warnPolicy)
				writeFile(t, filepath.Join(dir, "decision_test.rego"), testSrc)
				var out bytes.Buffer
				_, _, err := Test(context.Background(), dir, &out, false)
				wantSource(t, err, filepath.Join(dir, "decision_test.rego"), 6)
			})
		})
	}
	if n := hits.Load(); n != 0 {
		t.Fatalf("the policies reached the loopback server %d times", n)
	}
}

func TestCapabilities(t *testing.T) {
	caps := Capabilities()
	if caps.AllowNet == nil || len(caps.AllowNet) != 0 {
		t.Errorf("AllowNet = %#v, want an empty list (no host)", caps.AllowNet)
	}
	allowed := map[string]bool{}
	for _, b := range caps.Builtins {
		allowed[b.Name] = true
	}
	denied := map[string]bool{}
	for _, d := range DeniedBuiltins() {
		if d[1] == "" {
			t.Errorf("denied builtin %s has no reason", d[0])
		}
		denied[d[0]] = true
	}
	// Every builtin OPA marks non-deterministic is denied, and every one
	// named in the deny list exists in this OPA version (a rename would
	// otherwise let it through unnoticed).
	for _, b := range ast.CapabilitiesForThisVersion().Builtins {
		if b.Nondeterministic && (!denied[b.Name] || allowed[b.Name]) {
			t.Errorf("non-deterministic builtin %s is allowed", b.Name)
		}
	}
	for name := range deniedBuiltins {
		if _, ok := ast.BuiltinMap[name]; !ok {
			t.Errorf("denied builtin %s does not exist in this OPA version", name)
		}
		if allowed[name] || !denied[name] {
			t.Errorf("builtin %s is allowed", name)
		}
	}
	for _, name := range []string{"print", "sprintf", "startswith", "time.parse_rfc3339_ns", "regex.match", "json.marshal"} {
		if !allowed[name] {
			t.Errorf("deterministic builtin %s is denied", name)
		}
	}
}

// TestHealthRulesPathConflicts: health rules compile as the policy does, so
// a rule that collides with data.driftguard.config fails in both.
func TestHealthRulesPathConflicts(t *testing.T) {
	tests := []struct {
		name string
		src  string
	}{
		{"config rule", "package driftguard\n\nconfig := {}\n\ndecision := {\"action\": \"allow\", \"reason\": \"x\"}\n\nhealth := {\"state\": \"Healthy\"}\n"},
		{"config package", "package driftguard.config\n\nguardUsers := []\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			mods := map[string]string{"rules.rego": tt.src}
			if !strings.Contains(tt.src, "decision") {
				mods["base.rego"] = "package driftguard\n\ndecision := {\"action\": \"allow\", \"reason\": \"x\"}\n\nhealth := {\"state\": \"Healthy\"}\n"
			}
			perr := NewEngine(testConfig, logr.Discard()).Load(mods)
			_, herr := NewHealthEngine(mods, logr.Discard())
			for what, err := range map[string]error{"policy": perr, "health rules": herr} {
				var ce *CompileError
				if !errors.As(err, &ce) || !strings.Contains(err.Error(), "rules.rego:") || !strings.Contains(err.Error(), "conflict") {
					t.Errorf("%s: error %v, want a path conflict in rules.rego", what, err)
				}
			}
		})
	}
}

// TestShippedPoliciesLoad: the default policy, the examples and the chart's
// copy compile with the capabilities, as policies and as health rule files.
func TestShippedPoliciesLoad(t *testing.T) {
	dirs := []string{"default", filepath.Join("..", "charts", "driftguard", "files", "policy")}
	examples, err := filepath.Glob(filepath.Join("..", "examples", "policies", "*"))
	if err != nil {
		t.Fatal(err)
	}
	dirs = append(dirs, examples...)
	for _, dir := range dirs {
		if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
			continue
		}
		t.Run(dir, func(t *testing.T) {
			if err := NewEngine(testConfig, logr.Discard()).LoadDir(dir); err != nil {
				t.Fatalf("LoadDir(%s): %v", dir, err)
			}
		})
	}
}

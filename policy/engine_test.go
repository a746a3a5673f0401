package policy

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
	"github.com/open-policy-agent/opa/v1/ast"

	"github.com/driftguard/driftguard/test/wait"
)

const guardSA = "system:serviceaccount:driftguard:driftguard"

var testConfig = Config{GuardUsers: []string{guardSA}, BreakGlassGroups: []string{"sre", "oncall"}}

// baseInput is a manual scale of a Git-managed Deployment.
func baseInput() Input {
	return Input{
		Operation: "UPDATE",
		User:      User{Username: "alice", Groups: []string{"dev", "system:authenticated"}},
		Resource:  Resource{Group: "apps", Version: "v1", Kind: "Deployment", Namespace: "shop", Name: "web"},
		Drift:     []Change{{Path: "/spec/replicas", Desired: int64(3), Live: int64(5)}},
		Source:    Source{URL: "https://git.example/infra.git", Revision: "9f2c1e0", Path: "apps/web/deployment.yaml", Line: 1},
		Guard:     "infra",
	}
}

func TestDefaultPolicy(t *testing.T) {
	e := NewEngine(testConfig, logr.Discard())
	if rev := e.Revision(); !strings.HasPrefix(rev, "default-") {
		t.Fatalf("Revision() = %q, want default-<hash>", rev)
	}
	user := func(name string, groups ...string) func(*Input) {
		return func(in *Input) {
			in.User = User{Username: name, Groups: groups, ServiceAccount: strings.HasPrefix(name, "system:serviceaccount:")}
		}
	}
	breakGlass := func(reason string) func(*Input) {
		return func(in *Input) { in.Annotations = map[string]string{"driftguard.io/break-glass": reason} }
	}
	op := func(o string) func(*Input) { return func(in *Input) { in.Operation = o } }

	tests := []struct {
		name       string
		mods       []func(*Input)
		wantAction Action
		wantRule   string
		wantReason string // substring
	}{
		{"guard identity", []func(*Input){user(guardSA, "system:serviceaccounts")}, Allow, "guard-identity", guardSA},
		{"guard identity on drift", []func(*Input){user(guardSA), op("DRIFT")}, Allow, "guard-identity", ""},
		{"controller manager", []func(*Input){user("system:kube-controller-manager")}, Allow, "system-controller", ""},
		{"scheduler", []func(*Input){user("system:kube-scheduler")}, Allow, "system-controller", ""},
		{"apiserver", []func(*Input){user("system:apiserver")}, Allow, "system-controller", ""},
		{"node", []func(*Input){user("system:node:worker-1", "system:nodes")}, Allow, "system-controller", ""},
		{"kube-system service account", []func(*Input){user("system:serviceaccount:kube-system:replicaset-controller")}, Allow, "system-controller", ""},
		{"other namespace service account", []func(*Input){user("system:serviceaccount:shop:deployer")}, Deny, "managed-by-git", ""},
		{"system:masters is not enough", []func(*Input){user("kubernetes-admin", "system:masters")}, Deny, "managed-by-git", ""},
		{"system:admin", []func(*Input){user("system:admin", "system:masters")}, Deny, "managed-by-git", ""},
		{"empty node name", []func(*Input){user("system:node:")}, Deny, "managed-by-git", ""},
		{"break-glass", []func(*Input){user("bob", "sre"), breakGlass("INC-1234: scale for sale")}, Allow, "break-glass", "INC-1234: scale for sale"},
		{"break-glass on drift", []func(*Input){user("bob", "oncall"), breakGlass("INC-9"), op("DRIFT")}, Allow, "break-glass", "INC-9"},
		{"break-glass blank reason", []func(*Input){user("bob", "sre"), breakGlass("  ")}, Deny, "managed-by-git", ""},
		{"break-glass without annotation", []func(*Input){user("bob", "sre")}, Deny, "managed-by-git", ""},
		{"break-glass wrong group", []func(*Input){user("alice", "dev"), breakGlass("INC-1")}, Deny, "managed-by-git", ""},
		{"drift is reverted", []func(*Input){op("DRIFT")}, Revert, "self-heal", ""},
		{"update denied", nil, Deny, "managed-by-git", "managed by Git are not allowed"},
		{"delete denied", []func(*Input){op("DELETE")}, Deny, "managed-by-git", "changes to objects managed by Git are not allowed"},
		{"create denied", []func(*Input){op("CREATE")}, Deny, "managed-by-git", ""},
		{"no source", []func(*Input){func(in *Input) { in.Source = Source{} }}, Deny, "managed-by-git", "changes to objects managed by Git are not allowed"},
		{"zero input", []func(*Input){func(in *Input) { *in = Input{} }}, Deny, "managed-by-git", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := baseInput()
			for _, m := range tt.mods {
				m(&in)
			}
			d, err := e.Decide(context.Background(), in)
			if err != nil {
				t.Fatalf("Decide: %v", err)
			}
			if d.Action != tt.wantAction || d.Rule != tt.wantRule {
				t.Fatalf("Decide = %+v, want action %q rule %q", d, tt.wantAction, tt.wantRule)
			}
			if d.Reason == "" || !strings.Contains(d.Reason, tt.wantReason) {
				t.Fatalf("reason %q does not contain %q", d.Reason, tt.wantReason)
			}
		})
	}
}

func TestDefaultPolicyWithoutConfig(t *testing.T) {
	e := NewEngine(Config{}, logr.Discard())
	in := baseInput()
	in.User = User{Username: guardSA}
	d, err := e.Decide(context.Background(), in)
	if err != nil {
		t.Fatal(err)
	}
	if d.Rule != "managed-by-git" {
		t.Fatalf("with no guard users configured, got %+v", d)
	}
}

const warnPolicy = `package driftguard

decision := {"action": "warn", "reason": "watched", "rule": "w"}
`

func TestLoadCompileErrorKeepsPrevious(t *testing.T) {
	tests := []struct {
		name     string
		modules  map[string]string
		wantLocs []string // file:line:col substrings
		wantCode string
	}{
		{
			name:     "parse error",
			modules:  map[string]string{"bad.rego": "package driftguard\n\ndecision := {\"action\": \"deny\"} if {\n\tinput.x ==\n}\n"},
			wantLocs: []string{"bad.rego:5:1"},
			wantCode: ast.ParseErr,
		},
		{
			name:     "unsafe variable",
			modules:  map[string]string{"bad.rego": "package driftguard\n\ndecision := x if {\n\ty := 1\n}\n"},
			wantLocs: []string{"bad.rego:3:13"},
			wantCode: ast.UnsafeVarErr,
		},
		{
			name: "errors in two files",
			modules: map[string]string{
				"a.rego": "package driftguard\n\ndecision := {\"action\": \"deny\"}\n",
				"b.rego": "package driftguard\n\nfoo if {\n",
				"c.rego": "package driftguard\n\nbar := [\n",
			},
			wantLocs: []string{"b.rego:", "c.rego:"},
			wantCode: ast.ParseErr,
		},
		{
			name:     "rule over the config data",
			modules:  map[string]string{"cfg.rego": "package driftguard\n\nconfig := {}\n\ndecision := {\"action\": \"deny\"}\n"},
			wantLocs: []string{"cfg.rego:3:1"},
			wantCode: ast.CompileErr,
		},
		{
			name:     "empty file",
			modules:  map[string]string{"empty.rego": "# nothing here\n"},
			wantLocs: []string{"empty.rego:1:1"},
			wantCode: ast.ParseErr,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := NewEngine(testConfig, logr.Discard())
			if err := e.Load(map[string]string{"warn.rego": warnPolicy}); err != nil {
				t.Fatal(err)
			}
			good := e.Revision()

			err := e.Load(tt.modules)
			var ce *CompileError
			if !errors.As(err, &ce) {
				t.Fatalf("Load error = %v (%T), want *CompileError", err, err)
			}
			for _, loc := range tt.wantLocs {
				if !strings.Contains(err.Error(), loc) {
					t.Errorf("error %q does not name %s", err, loc)
				}
			}
			if ce.Errors[0].Code != tt.wantCode || ce.Errors[0].Line == 0 || ce.Errors[0].File == "" {
				t.Errorf("first error = %+v, want code %s with a location", ce.Errors[0], tt.wantCode)
			}

			if e.Revision() != good {
				t.Fatalf("revision changed to %q after a bad load", e.Revision())
			}
			d, err := e.Decide(context.Background(), baseInput())
			if err != nil || d.Rule != "w" {
				t.Fatalf("after bad load Decide = %+v, %v; want the previous policy", d, err)
			}
		})
	}
}

func TestLoadRejects(t *testing.T) {
	tests := []struct {
		name    string
		modules map[string]string
		want    string
	}{
		{"no modules", nil, "no Rego policy files"},
		{"only tests", map[string]string{"x_test.rego": "package driftguard_test\n\ntest_x if true\n"}, "no Rego policy files"},
		{"no decision rule", map[string]string{"a.rego": "package other\n\ndecision := {\"action\": \"deny\"}\n"}, "no rule defines data.driftguard.decision"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := NewEngine(testConfig, logr.Discard())
			rev := e.Revision()
			err := e.Load(tt.modules)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Load error = %v, want %q", err, tt.want)
			}
			if e.Revision() != rev {
				t.Fatal("revision changed after a rejected load")
			}
		})
	}
}

func TestLoadSkipsTestModulesAndHashesSources(t *testing.T) {
	e := NewEngine(testConfig, logr.Discard())
	mods := map[string]string{
		"warn.rego":      warnPolicy,
		"warn_test.rego": "this is not Rego at all {",
	}
	if err := e.Load(mods); err != nil {
		t.Fatalf("Load with a broken _test.rego: %v", err)
	}
	rev := e.Revision()
	if len(rev) != 12 || strings.HasPrefix(rev, "default-") {
		t.Fatalf("Revision() = %q, want a 12 digit hash", rev)
	}
	mods["warn_test.rego"] = "changed"
	if err := e.Load(mods); err != nil || e.Revision() != rev {
		t.Fatalf("changing a test file changed the revision: %v, %q != %q", err, e.Revision(), rev)
	}
	mods["warn.rego"] = warnPolicy + "\n# edited\n"
	if err := e.Load(mods); err != nil || e.Revision() == rev {
		t.Fatalf("editing the policy kept revision %q (err %v)", rev, err)
	}
}

func TestDecideBadDecisions(t *testing.T) {
	tests := []struct {
		name   string
		policy string
		want   string
	}{
		{"undefined", `decision := {"action": "deny"} if input.operation == "NOPE"`, "no decision"},
		{"unknown action", `decision := {"action": "maybe", "reason": "x"}`, `unknown action "maybe"`},
		{"missing action", `decision := {"reason": "x"}`, "has no action"},
		{"action not a string", `decision := {"action": 1}`, "action is a number"},
		{"reason not a string", `decision := {"action": "deny", "reason": ["x"]}`, "reason is an array"},
		{"rule not a string", `decision := {"action": "deny", "rule": {}}`, "rule is an object"},
		{"string", `decision := "deny"`, "wrong shape"},
		{"several (set)", "decision contains {\"action\": \"deny\"}\ndecision contains {\"action\": \"allow\"}", "several decisions"},
		{"empty set", "decision contains {\"action\": \"deny\"} if false", "no decision"},
		{"conflicting rules", "decision := {\"action\": \"deny\"} if input.operation == \"UPDATE\"\ndecision := {\"action\": \"allow\"} if input.user.username == \"alice\"", "conflict"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := NewEngine(testConfig, logr.Discard())
			if err := e.Load(map[string]string{"p.rego": "package driftguard\n\n" + tt.policy + "\n"}); err != nil {
				t.Fatalf("Load: %v", err)
			}
			d, err := e.Decide(context.Background(), baseInput())
			if err == nil {
				t.Fatalf("Decide = %+v, want an error", d)
			}
			if !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), e.Revision()) {
				t.Fatalf("error %q should contain %q and the revision %q", err, tt.want, e.Revision())
			}
		})
	}
}

func TestDecideValidShapes(t *testing.T) {
	tests := []struct {
		policy string
		want   Decision
	}{
		{`decision := {"action": "warn"}`, Decision{Action: Warn}},
		{`decision := {"action": "revert", "reason": "r", "rule": "x", "extra": 1}`, Decision{Action: Revert, Reason: "r", Rule: "x"}},
		{"decision.action := \"allow\"\ndecision.reason := \"by parts\"", Decision{Action: Allow, Reason: "by parts"}},
	}
	for _, tt := range tests {
		t.Run(string(tt.want.Action), func(t *testing.T) {
			e := NewEngine(testConfig, logr.Discard())
			if err := e.Load(map[string]string{"p.rego": "package driftguard\n\n" + tt.policy + "\n"}); err != nil {
				t.Fatal(err)
			}
			d, err := e.Decide(context.Background(), baseInput())
			if err != nil || d != tt.want {
				t.Fatalf("Decide = %+v, %v; want %+v", d, err, tt.want)
			}
		})
	}
}

func TestDecideSeesConfigAndInput(t *testing.T) {
	e := NewEngine(testConfig, logr.Discard())
	policy := `package driftguard

decision := {"action": "allow", "reason": sprintf("%v|%v|%v|%v|%v", [
	data.driftguard.config.breakGlassGroups,
	input.object.spec.replicas,
	input.drift[0].live,
	input.annotations.team,
	input.source.line,
])}
`
	if err := e.Load(map[string]string{"p.rego": policy}); err != nil {
		t.Fatal(err)
	}
	in := baseInput()
	in.Object = map[string]any{"spec": map[string]any{"replicas": int64(5)}}
	in.Annotations = map[string]string{"team": "web"}
	in.Source.Line = 12
	d, err := e.Decide(context.Background(), in)
	if err != nil {
		t.Fatal(err)
	}
	if want := `["sre", "oncall"]|5|5|web|12`; d.Reason != want {
		t.Fatalf("reason = %q, want %q", d.Reason, want)
	}
}

func TestDecideRespectsContext(t *testing.T) {
	e := NewEngine(testConfig, logr.Discard())
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := e.Decide(ctx, baseInput()); err == nil {
		t.Fatal("Decide with a cancelled context succeeded")
	}
}

func TestInputValueMatchesJSON(t *testing.T) {
	full := baseInput()
	full.SubResource = "scale"
	full.User.UID = "u-1"
	full.User.ServiceAccount = true
	full.Object = map[string]any{
		"apiVersion": "apps/v1",
		"spec":       map[string]any{"replicas": int64(5), "ratio": 0.25, "big": uint64(1 << 63), "i32": int32(7), "i": 3},
		"list":       []any{"a", nil, true, json.Number("1.5"), []string{"x"}, map[string]string{"k": "v"}},
	}
	full.OldObject = map[string]any{"spec": map[string]any{"replicas": float64(3)}}
	full.Desired = map[string]any{"spec": map[string]any{"replicas": 3}}
	full.Annotations = map[string]string{"driftguard.io/break-glass": "INC-1"}
	full.DryRun = true
	full.Orphan = true
	full.Drift = append(full.Drift, Change{Path: "/spec/hostNetwork", Live: true}, Change{Path: "/spec/x", Desired: false, Old: false})
	full.Added, full.Removed = []string{"/spec/hostNetwork"}, []string{"/spec/x"}
	full.FieldManager = "kubectl-patch"

	empty := Input{Annotations: map[string]string{}, Object: map[string]any{}, Drift: []Change{}}

	for name, in := range map[string]Input{"zero": {}, "base": baseInput(), "full": full, "empty collections": empty} {
		t.Run(name, func(t *testing.T) {
			got, err := inputValue(&in)
			if err != nil {
				t.Fatal(err)
			}
			raw, err := json.Marshal(in)
			if err != nil {
				t.Fatal(err)
			}
			want, err := ast.ValueFromReader(strings.NewReader(string(raw)))
			if err != nil {
				t.Fatal(err)
			}
			if got.Compare(want) != 0 {
				t.Fatalf("inputValue differs from JSON:\n got %v\nwant %v", got, want)
			}
		})
	}
}

func TestInputValueRejects(t *testing.T) {
	cyclic := map[string]any{}
	cyclic["self"] = cyclic
	tests := []struct {
		name string
		in   Input
		want string
	}{
		{"NaN", Input{Drift: []Change{{Path: "/x", Live: nanValue()}}}, "input.drift[0].live"},
		{"cycle", Input{Object: cyclic}, "nested deeper"},
		{"bad json.Number", Input{Desired: map[string]any{"n": json.Number("x1")}}, "invalid number"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := NewEngine(testConfig, logr.Discard())
			_, err := e.Decide(context.Background(), tt.in)
			if err == nil || !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), "convert input") {
				t.Fatalf("Decide error = %v, want it to mention %q", err, tt.want)
			}
		})
	}
}

func nanValue() any {
	zero := 0.0
	return zero / zero
}

// writeFile writes content to path atomically (temporary file and rename).
func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	tmp := filepath.Join(filepath.Dir(path), ".tmp-"+filepath.Base(path))
	if err := os.WriteFile(tmp, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

func TestLoadDir(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "decision.rego"), "package driftguard\n\ndecision := {\"action\": \"warn\", \"reason\": helper}\n")
	writeFile(t, filepath.Join(dir, "lib", "helper.rego"), "package driftguard\n\nhelper := \"from lib\"\n")
	writeFile(t, filepath.Join(dir, "decision_test.rego"), "not rego {")
	writeFile(t, filepath.Join(dir, "README.md"), "not rego {")
	// A mounted ConfigMap keeps a second copy under a hidden, timestamped dir.
	writeFile(t, filepath.Join(dir, "..2026_01_01_00_00_00.1", "decision.rego"), "package driftguard\n\ndecision := 1\n")

	e := NewEngine(testConfig, logr.Discard())
	if err := e.LoadDir(dir); err != nil {
		t.Fatalf("LoadDir: %v", err)
	}
	d, err := e.Decide(context.Background(), baseInput())
	if err != nil || d.Action != Warn || d.Reason != "from lib" {
		t.Fatalf("Decide = %+v, %v", d, err)
	}

	good := e.Revision()
	writeFile(t, filepath.Join(dir, "lib", "helper.rego"), "package driftguard\n\nhelper := \n")
	err = e.LoadDir(dir)
	if want := filepath.Join(dir, "lib", "helper.rego") + ":"; err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("LoadDir error = %v, want it to name %s", err, want)
	}
	if e.Revision() != good {
		t.Fatal("revision changed after a bad LoadDir")
	}

	if err := e.LoadDir(filepath.Join(dir, "missing")); err == nil || !strings.Contains(err.Error(), "missing") {
		t.Fatalf("LoadDir of a missing dir: %v", err)
	}
	if err := e.LoadDir(t.TempDir()); err == nil || !strings.Contains(err.Error(), "no Rego policy files") {
		t.Fatalf("LoadDir of an empty dir: %v", err)
	}
}

// logSink records what a funcr logger wrote.
type logSink struct {
	mu    sync.Mutex
	lines []string
}

func (s *logSink) logger() logr.Logger {
	return funcr.New(func(prefix, args string) {
		s.mu.Lock()
		defer s.mu.Unlock()
		s.lines = append(s.lines, prefix+" "+args)
	}, funcr.Options{})
}

func (s *logSink) count(substr string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, l := range s.lines {
		if strings.Contains(l, substr) {
			n++
		}
	}
	return n
}

func TestWatch(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "decision.rego")
	policy := func(rule string) string {
		return fmt.Sprintf("package driftguard\n\ndecision := {\"action\": \"warn\", \"reason\": \"r\", \"rule\": %q}\n", rule)
	}
	writeFile(t, file, policy("one"))

	sink := &logSink{}
	e := NewEngine(testConfig, sink.logger())
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		e.Watch(ctx, dir, 5*time.Millisecond)
	}()
	t.Cleanup(func() { cancel(); <-done })

	rule := func() string {
		d, err := e.Decide(context.Background(), baseInput())
		if err != nil {
			t.Errorf("Decide: %v", err)
		}
		return d.Rule
	}
	ruleIs := func(want string) func() error {
		return func() error {
			if got := rule(); got != want {
				return fmt.Errorf("rule %q, want %q", got, want)
			}
			return nil
		}
	}
	wait.Eventually(t, 10*time.Second, "initial load", ruleIs("one"))

	writeFile(t, file, policy("two"))
	wait.Eventually(t, 10*time.Second, "changed policy", ruleIs("two"))
	good := e.Revision()

	writeFile(t, file, "package driftguard\n\ndecision := {\n")
	wait.Eventually(t, 10*time.Second, "error logged", func() error {
		if sink.count("keeping the last good policy") == 0 {
			return errors.New("not logged yet")
		}
		return nil
	})
	// Part of the scenario, not a wait: the watcher polls every 5 ms, so in
	// 50 ms it reads the same bad content several more times.
	time.Sleep(50 * time.Millisecond)
	if n := sink.count("keeping the last good policy"); n != 1 {
		t.Errorf("the same bad policy was logged %d times, want once", n)
	}
	if e.Revision() != good || rule() != "two" {
		t.Fatalf("bad policy replaced the good one: revision %q", e.Revision())
	}
	if sink.count(filepath.Base(file)+":4:") == 0 {
		t.Errorf("logged error does not name file:line: %q", sink.lines)
	}

	writeFile(t, file, policy("three"))
	wait.Eventually(t, 10*time.Second, "fixed policy", ruleIs("three"))

	cancel()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("Watch did not return after its context was cancelled")
	}
}

func TestConcurrentDecideAndLoad(t *testing.T) {
	e := NewEngine(testConfig, logr.Discard())
	policies := []map[string]string{
		{"a.rego": warnPolicy},
		DefaultModules(),
		{"b.rego": "package driftguard\n\ndecision := {\"action\": \"deny\", \"reason\": \"b\"}\n"},
	}
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	var wg sync.WaitGroup
	wg.Go(func() {
		for i := 0; ctx.Err() == nil; i++ {
			if err := e.Load(policies[i%len(policies)]); err != nil {
				t.Errorf("Load: %v", err)
				return
			}
		}
	})
	for range 8 {
		wg.Go(func() {
			for ctx.Err() == nil {
				d, err := e.Decide(context.Background(), baseInput())
				if err != nil || !d.Action.Valid() {
					t.Errorf("Decide = %+v, %v", d, err)
					return
				}
			}
		})
	}
	wg.Wait()
}

func TestDecideSeesPolicyData(t *testing.T) {
	e := NewEngine(Config{}, logr.Discard())
	err := e.Load(map[string]string{"team.rego": `package driftguard

decision := {"action": "allow", "reason": "owning team", "rule": "team"} if {
	input.policyData.team in input.user.groups
} else := {"action": "deny", "reason": "not the owning team", "rule": "team"}
`})
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		groups []string
		want   Action
	}{{[]string{"payments"}, Allow}, {[]string{"search"}, Deny}} {
		in := baseInput()
		in.User.Groups = tt.groups
		in.PolicyData = map[string]string{"team": "payments"}
		d, err := e.Decide(context.Background(), in)
		if err != nil || d.Action != tt.want {
			t.Fatalf("groups %v: decision %+v, %v; want %s", tt.groups, d, err, tt.want)
		}
	}
}

// slowPolicy loops over nine million pairs before it decides.
const slowPolicy = `package driftguard

decision := {"action": "allow", "reason": "slow"} if {
	count([x | some i in numbers.range(1, 3000); some j in numbers.range(1, 3000); x := i * j; x < 0]) == 0
}
`

func TestDecideTimeout(t *testing.T) {
	e := NewEngine(Config{Timeout: 50 * time.Millisecond}, logr.Discard())
	if err := e.Load(map[string]string{"slow.rego": slowPolicy}); err != nil {
		t.Fatal(err)
	}
	_, err := e.Decide(context.Background(), baseInput())
	if !errors.Is(err, ErrTimeout) {
		t.Fatalf("Decide of a slow policy = %v, want ErrTimeout", err)
	}
	if !strings.Contains(err.Error(), "timed out after 50ms") || !strings.Contains(err.Error(), e.Revision()) {
		t.Fatalf("error %q names neither the bound nor the revision", err)
	}
	// The caller's own deadline is not reported as the policy's timeout.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
	defer cancel()
	e2 := NewEngine(Config{Timeout: time.Minute}, logr.Discard())
	if err := e2.Load(map[string]string{"slow.rego": slowPolicy}); err != nil {
		t.Fatal(err)
	}
	if _, err := e2.Decide(ctx, baseInput()); err == nil || errors.Is(err, ErrTimeout) {
		t.Fatalf("Decide past the caller's deadline = %v, want an error other than ErrTimeout", err)
	}
	// A fast policy under the same bound decides.
	if err := e.Load(DefaultModules()); err != nil {
		t.Fatal(err)
	}
	if d, err := e.Decide(context.Background(), baseInput()); err != nil || !d.Action.Valid() {
		t.Fatalf("Decide with the default policy = %+v, %v", d, err)
	}
}

func TestDefaultTimeout(t *testing.T) {
	if e := NewEngine(Config{}, logr.Discard()); e.timeout != DefaultTimeout {
		t.Fatalf("timeout = %s, want %s", e.timeout, DefaultTimeout)
	}
}

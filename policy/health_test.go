package policy

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/driftguard/driftguard/health"
)

// databaseHealth is a custom health rule for the Database kind of
// health/testdata: Degraded when replication lags by more than a minute.
const databaseHealth = `package driftguard

health := {"state": "Degraded", "message": sprintf("replication lag %ds", [input.object.status.replicationLagSeconds])} if {
	input.object.kind == "Database"
	input.object.status.replicationLagSeconds > 60
}

health := {"state": "Healthy", "message": "replicating"} if {
	input.object.kind == "Database"
	input.object.status.replicationLagSeconds <= 60
}
`

// healthObject reads one object from health/testdata, optionally setting
// status fields.
func healthObject(t *testing.T, file string, status map[string]any) *unstructured.Unstructured {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "health", "testdata", file))
	if err != nil {
		t.Fatal(err)
	}
	j, err := yaml.YAMLToJSON(b)
	if err != nil {
		t.Fatal(err)
	}
	u := &unstructured.Unstructured{}
	if err := u.UnmarshalJSON(j); err != nil {
		t.Fatal(err)
	}
	for k, v := range status {
		if err := unstructured.SetNestedField(u.Object, v, "status", k); err != nil {
			t.Fatal(err)
		}
	}
	return u
}

func newHealth(t *testing.T, src string) *HealthEngine {
	t.Helper()
	h, err := NewHealthEngine(map[string]string{"health.rego": src}, logr.Discard())
	if err != nil {
		t.Fatal(err)
	}
	return h
}

func TestHealthRule(t *testing.T) {
	h := newHealth(t, databaseHealth)
	ctx := context.Background()
	for _, tc := range []struct {
		name   string
		obj    *unstructured.Unstructured
		want   health.Result
		wantOK bool
	}{
		{"lagging", healthObject(t, "crd-reconciling.yaml", map[string]any{"replicationLagSeconds": int64(300)}), health.Result{State: health.Degraded, Message: "replication lag 300s"}, true},
		{"in step", healthObject(t, "crd-reconciling.yaml", map[string]any{"replicationLagSeconds": int64(2)}), health.Result{State: health.Healthy, Message: "replicating"}, true},
		{"float64 numbers", healthObject(t, "crd-reconciling.yaml", map[string]any{"replicationLagSeconds": float64(90)}), health.Result{State: health.Degraded, Message: "replication lag 90s"}, true},
		{"undefined for the Database without the field", healthObject(t, "crd-reconciling.yaml", nil), health.Result{}, false},
		{"undefined for another kind", healthObject(t, "deployment-healthy.yaml", nil), health.Result{}, false},
		{"nil object", nil, health.Result{}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, ok, err := h.Health(ctx, tc.obj)
			if err != nil || ok != tc.wantOK || got != tc.want {
				t.Errorf("Health = %+v, %v, %v; want %+v, %v, nil", got, ok, err, tc.want, tc.wantOK)
			}
		})
	}
}

func TestHealthRuleErrors(t *testing.T) {
	obj := healthObject(t, "crd-reconciling.yaml", nil)
	for _, tc := range []struct {
		name, src, wantErr string
	}{
		{"a string", `package driftguard
health := "Degraded"`, `wrong shape: data.driftguard.health is a string, want an object {"state", "message"}`},
		{"a set", `package driftguard
health contains {"state": "Degraded"} if true`, "wrong shape: data.driftguard.health is an array"},
		{"unknown state", `package driftguard
health := {"state": "Broken", "message": "x"}`, `unknown state "Broken" (want NoHealth, Healthy, Suspended, Progressing, Unknown, Missing, Degraded)`},
		{"state in lower case", `package driftguard
health := {"state": "degraded"}`, `unknown state "degraded"`},
		{"no state", `package driftguard
health := {"message": "x"}`, "has no state"},
		{"state not a string", `package driftguard
health := {"state": 3}`, "state is a number, want a string"},
		{"message not a string", `package driftguard
health := {"state": "Healthy", "message": ["x"]}`, "message is an array, want a string"},
		{"unknown key", `package driftguard
health := {"state": "Healthy", "msg": "x"}`, `unknown key "msg"`},
		{"conflicting rules", `package driftguard
health := {"state": "Healthy"} if input.object.kind == "Database"
health := {"state": "Degraded"} if input.object.metadata.name == "orders"`, "eval_conflict_error"},
		{"builtin error", `package driftguard
health := {"state": "Degraded", "message": sprintf("%d", [to_number(input.object.spec.engine)])} if input.object.kind == "Database"`, "to_number"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHealth(t, tc.src)
			got, ok, err := h.Health(context.Background(), obj)
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("Health = %+v, %v, %v; want an error containing %q", got, ok, err, tc.wantErr)
			}
			if !strings.Contains(err.Error(), h.Revision()) {
				t.Errorf("error %q does not name the revision %s", err, h.Revision())
			}
			if ok || got != (health.Result{}) {
				t.Errorf("Health = %+v, %v with an error; want nothing", got, ok)
			}
		})
	}
}

// An error of the custom rule falls back to the built-in assessment and is
// reported; an undefined rule falls back silently.
func TestHealthEngineWithAssessCustom(t *testing.T) {
	ctx := context.Background()
	db := healthObject(t, "crd-reconciling.yaml", nil)
	builtin := health.Result{State: health.Progressing, Message: "creating primary instance"}

	bad := newHealth(t, `package driftguard
health := {"state": "Bad"} if input.object.kind == "Database"`)
	got, err := health.AssessCustom(ctx, db, nil, bad)
	if got != builtin || err == nil || !strings.Contains(err.Error(), "custom health of Database shop/orders") {
		t.Errorf("AssessCustom with a bad rule = %+v, %v; want the built-in result and an error", got, err)
	}

	good := newHealth(t, databaseHealth)
	if got, err := health.AssessCustom(ctx, db, nil, good); got != builtin || err != nil {
		t.Errorf("AssessCustom with an undefined rule = %+v, %v; want the built-in result", got, err)
	}
	var none *HealthEngine // as a caller that loaded no rules might pass it
	if got, err := health.AssessCustom(ctx, db, nil, none); got != builtin || err != nil {
		t.Errorf("AssessCustom with a nil engine = %+v, %v; want the built-in result", got, err)
	}
	lagging := healthObject(t, "crd-reconciling.yaml", map[string]any{"replicationLagSeconds": int64(61)})
	if got, err := health.AssessCustom(ctx, lagging, nil, good); got != (health.Result{State: health.Degraded, Message: "replication lag 61s"}) || err != nil {
		t.Errorf("AssessCustom = %+v, %v", got, err)
	}
}

func TestNewHealthEngineRejects(t *testing.T) {
	for _, tc := range []struct {
		name    string
		modules map[string]string
		check   func(error) bool
		wantErr string
	}{
		{"no modules", map[string]string{}, nil, "no Rego files"},
		{"only tests", map[string]string{"health_test.rego": "package driftguard\ntest_x if true"}, nil, "no Rego files"},
		{"no health rule", map[string]string{"decision.rego": `package driftguard
decision := {"action": "allow", "reason": "ok"}`}, func(err error) bool { return errors.Is(err, ErrNoHealthRule) }, "no rule defines data.driftguard.health"},
		{"parse error", map[string]string{"health.rego": "package driftguard\nhealth := {\"state\": \n"}, nil, "health.rego:"},
		{"compile error", map[string]string{"health.rego": "package driftguard\nhealth := {\"state\": undefined_thing}"}, func(err error) bool {
			var ce *CompileError
			return errors.As(err, &ce) && ce.Errors[0].File == "health.rego" && ce.Errors[0].Line == 2
		}, "rego_unsafe_var_error"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := NewHealthEngine(tc.modules, logr.Discard())
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("NewHealthEngine error = %v, want one containing %q", err, tc.wantErr)
			}
			if tc.check != nil && !tc.check(err) {
				t.Errorf("error %v (%T) is not as expected", err, err)
			}
		})
	}
}

func TestLoadHealthDir(t *testing.T) {
	dir := t.TempDir()
	for name, src := range map[string]string{
		"health/database.rego": databaseHealth,
		// The decision rule may live beside the health rules.
		"decision.rego": "package driftguard\ndecision := {\"action\": \"allow\", \"reason\": \"ok\"}\n",
		// Tests and hidden folders are not read.
		"health/database_test.rego": "package driftguard\ntest_broken if {",
		".hidden/broken.rego":       "not rego",
	} {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	h, err := LoadHealthDir(dir, logr.Discard())
	if err != nil {
		t.Fatal(err)
	}
	obj := healthObject(t, "crd-reconciling.yaml", map[string]any{"replicationLagSeconds": int64(120)})
	if got, ok, err := h.Health(context.Background(), obj); !ok || err != nil || got.State != health.Degraded {
		t.Errorf("Health = %+v, %v, %v", got, ok, err)
	}

	// A compile error names the file by its path under dir.
	broken := filepath.Join(dir, "health", "broken.rego")
	if err := os.WriteFile(broken, []byte("package driftguard\nhealth := {\"state\": x}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadHealthDir(dir, logr.Discard()); err == nil || !strings.Contains(err.Error(), broken+":2") {
		t.Errorf("LoadHealthDir error = %v, want one naming %s:2", err, broken)
	}
	if _, err := LoadHealthDir(filepath.Join(dir, "absent"), logr.Discard()); err == nil {
		t.Error("LoadHealthDir of a missing folder: no error")
	}
}

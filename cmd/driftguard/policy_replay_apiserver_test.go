package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/driftguard/driftguard/policy"
)

func TestAPIServerDecision(t *testing.T) {
	const msg = `changes to objects managed by Git are not allowed: configmaps/settings comes from config/settings.yaml:1 in https://git.example/shop.git at revision 69c4415 (Guard shop); change it there (changed: data, metadata.labels)`
	event := func(stage, verb, resource, name, message string) string {
		failures, _ := json.Marshal([]map[string]any{{"message": message, "policy": "dg-deny", "binding": "dg-deny", "expressionIndex": 0, "validationActions": []string{"Deny", "Audit"}}})
		ev, _ := json.Marshal(map[string]any{
			"kind": "Event", "apiVersion": "audit.k8s.io/v1", "level": "Metadata", "stage": stage, "verb": verb,
			"user":           map[string]any{"username": "alice", "groups": []string{"dev", "system:authenticated"}},
			"objectRef":      map[string]any{"resource": resource, "namespace": "shop", "name": name, "apiVersion": "v1"},
			"stageTimestamp": "2026-12-03T10:00:00.000000Z", "annotations": map[string]string{validationFailureAnnotation: string(failures)},
		})
		return string(ev)
	}
	for _, tc := range []struct {
		name, line string
		ok         bool
		op, kind   string
		drift      []string
	}{
		{"a compiled denial", event("ResponseComplete", "patch", "configmaps", "settings", msg), true, "UPDATE", "ConfigMap", []string{"/data", "/metadata/labels"}},
		{"a delete", event("ResponseComplete", "delete", "configmaps", "settings", strings.Replace(msg, "(changed: data, metadata.labels)", "(delete)", 1)), true, "DELETE", "ConfigMap", nil},
		{"another stage of the same request", event("ResponseStarted", "patch", "configmaps", "settings", msg), false, "", "", nil},
		{"a message about another object", event("ResponseComplete", "patch", "configmaps", "other", msg), false, "", "", nil},
		{"another policy", event("ResponseComplete", "patch", "configmaps", "settings", "denied by someone else"), false, "", "", nil},
		{"a guard record", `{"type":"decision","user":"alice"}`, false, "", "", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec, ok := apiServerDecision([]byte(tc.line))
			if ok != tc.ok {
				t.Fatalf("ok = %v, want %v", ok, tc.ok)
			}
			if !ok {
				return
			}
			var in policy.Input
			if err := json.Unmarshal(rec.PolicyInput, &in); err != nil {
				t.Fatal(err)
			}
			var drift []string
			for _, c := range in.Drift {
				drift = append(drift, c.Path)
			}
			if rec.Action != "deny" || rec.Rule != compiledRule || in.Operation != tc.op || in.Resource.Kind != tc.kind || in.Guard != "shop" ||
				in.Source.Path != "config/settings.yaml" || in.User.Username != "alice" || strings.Join(drift, ",") != strings.Join(tc.drift, ",") {
				t.Errorf("record %+v, input %+v", rec, in)
			}
		})
	}
}

package driftguard_test

import data.driftguard

config := {"guardUsers": ["system:serviceaccount:driftguard:driftguard"], "breakGlassGroups": ["oncall"]}

scale := {
	"operation": "UPDATE",
	"user": {"username": "sam", "groups": ["sre", "system:authenticated"], "serviceAccount": false},
	"resource": {"group": "apps", "version": "v1", "kind": "Deployment", "namespace": "shop", "name": "web"},
	"drift": [{"path": "/spec/replicas", "desired": 3, "live": 10}],
	"source": {"url": "https://git.example/infra.git", "revision": "9f2c1e0", "path": "apps/web/deployment.yaml", "line": 1},
	"dryRun": false,
	"guard": "infra",
}

decide(inp) := d if {
	d := driftguard.decision with input as inp with data.driftguard.config as config
}

test_sre_scaling_warns if {
	d := decide(scale)
	d.action == "warn"
	d.rule == "sre-scaling"
	contains(d.reason, "apps/web/deployment.yaml")
}

test_sre_scale_subresource_warns if {
	decide(object.union(scale, {"subResource": "scale", "drift": []})).rule == "sre-scaling"
}

test_sre_scaled_drift_is_not_reverted if {
	d := decide(object.union(scale, {"operation": "DRIFT"}))
	d.action == "warn"
}

test_sre_statefulset_warns if {
	decide(object.union(scale, {"resource": {"kind": "StatefulSet"}})).rule == "sre-scaling"
}

test_sre_other_change_denied if {
	inp := object.union(scale, {"drift": [
		{"path": "/spec/replicas", "desired": 3, "live": 10},
		{"path": "/spec/template/spec/containers/0/image", "desired": "web:1", "live": "web:2"},
	]})
	decide(inp).rule == "managed-by-git"
}

test_sre_no_drift_denied if {
	decide(object.union(scale, {"drift": []})).rule == "managed-by-git"
}

test_sre_delete_denied if {
	decide(object.union(scale, {"operation": "DELETE"})).rule == "managed-by-git"
}

test_sre_other_kind_denied if {
	decide(object.union(scale, {"resource": {"kind": "ConfigMap"}})).rule == "managed-by-git"
}

test_non_sre_scaling_denied if {
	inp := object.union(scale, {"user": {"username": "dev", "groups": ["dev"], "serviceAccount": false}})
	decide(inp).rule == "managed-by-git"
}

test_non_sre_drift_reverted if {
	inp := object.union(scale, {"operation": "DRIFT", "user": {"username": "dev", "groups": ["dev"], "serviceAccount": false}})
	decide(inp).action == "revert"
}

test_guard_allowed if {
	inp := object.union(scale, {"user": {"username": "system:serviceaccount:driftguard:driftguard", "groups": [], "serviceAccount": true}})
	decide(inp).rule == "guard-identity"
}

test_break_glass_still_works if {
	inp := object.union(scale, {
		"user": {"username": "olga", "groups": ["oncall"], "serviceAccount": false},
		"drift": [{"path": "/spec/template/spec/containers/0/image", "desired": "web:1", "live": "web:2"}],
		"annotations": {"driftguard.io/break-glass": "INC-7: hotfix"},
	})
	decide(inp).rule == "break-glass"
}

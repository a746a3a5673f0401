package driftguard_test

import data.driftguard

config := {
	"guardUsers": ["system:serviceaccount:driftguard:driftguard"],
	"breakGlassGroups": ["sre", "oncall"],
}

base := {
	"operation": "UPDATE",
	"user": {"username": "alice", "groups": ["dev", "system:authenticated"], "serviceAccount": false},
	"resource": {"group": "apps", "version": "v1", "kind": "Deployment", "namespace": "shop", "name": "web"},
	"drift": [{"path": "/spec/replicas", "desired": 3, "live": 5}],
	"source": {"url": "https://git.example/infra.git", "revision": "9f2c1e0", "path": "apps/web/deployment.yaml", "line": 1},
	"dryRun": false,
	"guard": "infra",
}

as_user(name, groups) := object.union(base, {"user": {"username": name, "groups": groups, "serviceAccount": false}})

decide(inp) := d if {
	d := driftguard.decision with input as inp with data.driftguard.config as config
}

test_guard_identity_allowed if {
	d := decide(as_user("system:serviceaccount:driftguard:driftguard", ["system:serviceaccounts"]))
	d.action == "allow"
	d.rule == "guard-identity"
}

test_guard_identity_wins_over_drift if {
	inp := object.union(as_user("system:serviceaccount:driftguard:driftguard", []), {"operation": "DRIFT"})
	decide(inp).rule == "guard-identity"
}

test_system_controllers_allowed if {
	every name in [
		"system:kube-controller-manager",
		"system:kube-scheduler",
		"system:apiserver",
		"system:node:worker-1",
		"system:serviceaccount:kube-system:deployment-controller",
	] {
		d := decide(as_user(name, ["system:authenticated"]))
		d.action == "allow"
		d.rule == "system-controller"
	}
}

test_system_lookalikes_denied if {
	every name in [
		"system:admin",
		"system:anonymous",
		"system:node:",
		"system:serviceaccount:kube-system:",
		"system:serviceaccount:shop:deployer",
		"system:kube-proxy",
		"xsystem:kube-scheduler",
	] {
		decide(as_user(name, [])).rule == "managed-by-git"
	}
}

test_system_masters_not_allowed if {
	d := decide(as_user("kubernetes-admin", ["system:masters", "system:authenticated"]))
	d.action == "deny"
	d.rule == "managed-by-git"
}

test_break_glass_allowed_with_reason if {
	inp := object.union(as_user("bob", ["sre"]), {"annotations": {"driftguard.io/break-glass": "INC-1234: scale for sale"}})
	d := decide(inp)
	d.action == "allow"
	d.rule == "break-glass"
	d.temporary == true
	contains(d.reason, "INC-1234: scale for sale")
	contains(d.reason, "bob")
}

test_break_glass_wins_over_drift if {
	inp := object.union(as_user("bob", ["oncall"]), {
		"operation": "DRIFT",
		"annotations": {"driftguard.io/break-glass": "INC-9"},
	})
	decide(inp).rule == "break-glass"
}

test_break_glass_needs_reason if {
	every reason in ["", "   "] {
		inp := object.union(as_user("bob", ["sre"]), {"annotations": {"driftguard.io/break-glass": reason}})
		decide(inp).rule == "managed-by-git"
	}
}

test_break_glass_needs_annotation if {
	decide(as_user("bob", ["sre"])).rule == "managed-by-git"
}

test_break_glass_needs_group if {
	inp := object.union(as_user("alice", ["dev"]), {"annotations": {"driftguard.io/break-glass": "INC-1"}})
	decide(inp).rule == "managed-by-git"
}

test_drift_reverted if {
	d := decide(object.union(base, {"operation": "DRIFT"}))
	d.action == "revert"
	d.rule == "self-heal"
}

test_manual_change_denied if {
	every op in ["CREATE", "UPDATE", "DELETE"] {
		d := decide(object.union(base, {"operation": op}))
		d.action == "deny"
		d.rule == "managed-by-git"
		d.reason == "changes to objects managed by Git are not allowed"
	}
}

test_no_config_denies if {
	d := driftguard.decision with input as base
	d.rule == "managed-by-git"
}

test_orphan_create_warns if {
	inp := object.union(base, {"operation": "CREATE", "orphan": true, "drift": []})
	d := decide(inp)
	d.action == "warn"
	d.rule == "orphan"
	contains(d.reason, "Guard infra")
}

test_orphan_by_system_controller_allowed if {
	inp := object.union(as_user("system:serviceaccount:kube-system:replicaset-controller", []), {"operation": "CREATE", "orphan": true})
	decide(inp).rule == "system-controller"
}

test_garbage_collector_may_not_delete if {
	every name in ["system:serviceaccount:kube-system:generic-garbage-collector", "system:serviceaccount:kube-system:deployment-controller", "system:node:worker-1"] {
		inp := object.union(as_user(name, ["system:serviceaccounts"]), {"operation": "DELETE"})
		decide(inp).rule == "managed-by-git"
	}
}

test_namespace_controller_may_delete if {
	every name in ["system:serviceaccount:kube-system:namespace-controller", "system:kube-controller-manager"] {
		inp := object.union(as_user(name, []), {"operation": "DELETE"})
		decide(inp).rule == "system-controller"
	}
}

test_system_controllers_update_and_scale if {
	every op in ["UPDATE", "CREATE"] {
		inp := object.union(as_user("system:serviceaccount:kube-system:horizontal-pod-autoscaler", []), {"operation": op, "subResource": "scale"})
		decide(inp).rule == "system-controller"
	}
}

test_restoring_git_allowed if {
	inp := object.union(base, {"drift": [{"path": "/spec/replicas", "desired": 3, "live": 3, "old": 5}]})
	decide(inp).rule == "restores-git"
}

test_restoring_needs_every_change_to_be_git if {
	every drift in [
		[{"path": "/spec/replicas", "desired": 3, "live": 3, "old": 5}, {"path": "/spec/x", "desired": null, "live": true}],
		[{"path": "/spec/caBundle", "desired": null, "live": null, "old": "abc"}],
		[{"path": "/spec/a", "desired": false, "live": null, "old": false}],
		[],
	] {
		decide(object.union(base, {"drift": drift})).rule == "managed-by-git"
	}
}

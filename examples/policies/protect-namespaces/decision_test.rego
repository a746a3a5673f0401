package driftguard_test

import data.driftguard

config := {"guardUsers": ["system:serviceaccount:driftguard:driftguard"], "breakGlassGroups": ["sre"]}

delete_ns := {
	"operation": "DELETE",
	"user": {"username": "bob", "groups": ["sre"], "serviceAccount": false},
	"resource": {"group": "", "version": "v1", "kind": "Namespace", "namespace": "", "name": "shop"},
	"drift": [],
	"source": {"url": "https://git.example/infra.git", "revision": "9f2c1e0", "path": "namespaces/shop.yaml", "line": 1},
	"annotations": {"driftguard.io/break-glass": "INC-1: cleanup"},
	"dryRun": false,
	"guard": "infra",
}

decide(inp) := d if {
	d := driftguard.decision with input as inp with data.driftguard.config as config
}

test_namespace_delete_denied_even_with_break_glass if {
	d := decide(delete_ns)
	d.action == "deny"
	d.rule == "protect-namespaces"
	contains(d.reason, "namespaces/shop.yaml")
}

test_namespace_delete_denied_for_system_controllers if {
	inp := object.union(delete_ns, {"user": {"username": "system:kube-controller-manager", "groups": [], "serviceAccount": false}})
	decide(inp).rule == "protect-namespaces"
}

test_namespace_delete_denied_for_cluster_admin if {
	inp := object.union(delete_ns, {"user": {"username": "kubernetes-admin", "groups": ["system:masters"], "serviceAccount": false}})
	decide(inp).rule == "protect-namespaces"
}

test_guard_may_prune_namespaces if {
	inp := object.union(delete_ns, {"user": {"username": "system:serviceaccount:driftguard:driftguard", "groups": [], "serviceAccount": true}})
	decide(inp).rule == "guard-identity"
}

test_break_glass_namespace_update_allowed if {
	decide(object.union(delete_ns, {"operation": "UPDATE"})).rule == "break-glass"
}

test_break_glass_other_delete_allowed if {
	inp := object.union(delete_ns, {"resource": {"group": "apps", "kind": "Deployment", "namespace": "shop", "name": "web"}})
	decide(inp).rule == "break-glass"
}

test_lookalike_kind_in_other_group_not_protected if {
	inp := object.union(delete_ns, {"resource": {"group": "example.com", "kind": "Namespace"}})
	decide(inp).rule == "break-glass"
}

test_deleted_namespace_is_recreated if {
	inp := object.union(object.remove(delete_ns, ["annotations"]), {"operation": "DRIFT"})
	decide(inp).action == "revert"
}

test_delete_without_break_glass_denied if {
	inp := object.union(object.remove(delete_ns, ["annotations"]), {
		"resource": {"group": "apps", "kind": "Deployment", "namespace": "shop", "name": "web"},
	})
	decide(inp).rule == "managed-by-git"
}

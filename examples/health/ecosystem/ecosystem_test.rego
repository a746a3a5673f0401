package driftguard_test

import data.driftguard

# One test per rule file for `driftguard policy test`; the objects as the
# controllers leave them are in ../testdata, evaluated by
# policy/health_examples_test.go.

test_workflow_failed if {
	driftguard.health == {"state": "Degraded", "message": "failed: child 'main' failed"} with input as {"object": {
		"apiVersion": "argoproj.io/v1alpha1", "kind": "Workflow",
		"metadata": {"name": "w"}, "spec": {},
		"status": {"phase": "Failed", "message": "child 'main' failed"},
	}}
}

test_workflow_running if {
	driftguard.health == {"state": "Progressing", "message": "running (progress 1/3)"} with input as {"object": {
		"apiVersion": "argoproj.io/v1alpha1", "kind": "Workflow",
		"metadata": {"name": "w"}, "spec": {},
		"status": {"phase": "Running", "progress": "1/3"},
	}}
}

test_application_reports_its_health if {
	driftguard.health == {"state": "Degraded", "message": "Deployment web exceeded its progress deadline (Synced at 9f1c2e4)"} with input as {"object": {
		"apiVersion": "argoproj.io/v1alpha1", "kind": "Application",
		"metadata": {"name": "a"}, "spec": {},
		"status": {
			"health": {"status": "Degraded", "message": "Deployment web exceeded its progress deadline"},
			"sync": {"status": "Synced", "revision": "9f1c2e4b7a3d"},
		},
	}}
}

test_certificate_issuing if {
	driftguard.health == {"state": "Progressing", "message": "issuing: DoesNotExist: Issuing certificate as Secret does not exist"} with input as {"object": {
		"apiVersion": "cert-manager.io/v1", "kind": "Certificate",
		"metadata": {"name": "c", "generation": 1}, "spec": {},
		"status": {"conditions": [
			{"type": "Ready", "status": "False", "reason": "DoesNotExist", "message": "Issuing certificate as Secret does not exist"},
			{"type": "Issuing", "status": "True", "reason": "DoesNotExist", "message": "Issuing certificate as Secret does not exist"},
		]},
	}}
}

test_kustomization_suspended_before_anything if {
	driftguard.health.state == "Suspended" with input as {"object": {
		"apiVersion": "kustomize.toolkit.fluxcd.io/v1", "kind": "Kustomization",
		"metadata": {"name": "k", "generation": 2}, "spec": {"suspend": true},
		"status": {"observedGeneration": 1, "conditions": [{"type": "Stalled", "status": "True", "reason": "X"}]},
	}}
}

test_helmrelease_stalled if {
	driftguard.health == {"state": "Degraded", "message": "stalled: RetriesExceeded: Failed to upgrade after 3 attempt(s)"} with input as {"object": {
		"apiVersion": "helm.toolkit.fluxcd.io/v2", "kind": "HelmRelease",
		"metadata": {"name": "h", "generation": 1}, "spec": {},
		"status": {"observedGeneration": 1, "conditions": [
			{"type": "Stalled", "status": "True", "reason": "RetriesExceeded", "message": "Failed to upgrade after 3 attempt(s)"},
			{"type": "Ready", "status": "False", "reason": "UpgradeFailed", "message": "context deadline exceeded"},
		]},
	}}
}

test_managed_resource_creating if {
	driftguard.health == {"state": "Progressing", "message": "Creating"} with input as {"object": {
		"apiVersion": "rds.aws.upbound.io/v1beta1", "kind": "Instance",
		"metadata": {"name": "db"}, "spec": {"forProvider": {}},
		"status": {"conditions": [
			{"type": "Synced", "status": "True", "reason": "ReconcileSuccess"},
			{"type": "Ready", "status": "False", "reason": "Creating"},
		]},
	}}
}

# Kinds none of the rules know are left to the built-in rules.
test_other_kinds_undefined if {
	not driftguard.health with input as {"object": {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"}, "spec": {}}}
	not driftguard.health with input as {"object": {"apiVersion": "argoproj.io/v1alpha1", "kind": "Rollout", "metadata": {"name": "r"}, "spec": {}}}
}

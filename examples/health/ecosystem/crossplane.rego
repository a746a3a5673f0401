package driftguard

# Crossplane: a managed resource (any kind with spec.forProvider, e.g.
# s3.aws.upbound.io/v1beta1 Bucket) has a Synced condition (did the last
# call to the provider's API succeed) and a Ready condition (is the external
# resource usable: reasons Available, Creating, Deleting, Unavailable).
#
#   Synced False                     Degraded (ReconcileError: the provider's error)
#   Ready True                       Healthy
#   Ready False, Creating/Deleting   Progressing
#   Ready False, otherwise           Degraded
#   no Ready yet                     Progressing
#
# spec.managementPolicies without "Observe" or with only "Observe" does not
# change this: Crossplane still reports both conditions.

health := managed_health if {
	input.object.spec.forProvider
	health_condition(input.object, "Synced")
}

managed_ready := health_condition(input.object, "Ready")

managed_health := {"state": "Degraded", "message": sprintf("cannot sync with the provider: %s", [health_text(c)])} if {
	c := health_condition(input.object, "Synced")
	c.status == "False"
} else := {"state": "Healthy", "message": health_text(managed_ready)} if {
	managed_ready.status == "True"
} else := {"state": "Progressing", "message": health_text(managed_ready)} if {
	managed_ready.status == "False"
	managed_ready.reason in {"Creating", "Deleting"}
} else := {"state": "Degraded", "message": sprintf("not ready: %s", [health_text(managed_ready)])} if {
	managed_ready.status == "False"
} else := {"state": "Progressing", "message": "waiting for the provider to report readiness"}

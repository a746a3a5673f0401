package driftguard

# Flux: a Kustomization (kustomize.toolkit.fluxcd.io/v1) or HelmRelease
# (helm.toolkit.fluxcd.io/v2) follows the kstatus conventions: Ready,
# Reconciling and Stalled conditions, status.observedGeneration, and
# spec.suspend.
#
#   spec.suspend                       Suspended
#   generation not yet observed        Progressing
#   Stalled True                       Degraded (it will not retry without a change)
#   Reconciling True                   Progressing
#   Ready True                         Healthy, with the applied revision
#   Ready False                        Degraded (BuildFailed, HealthCheckFailed, UpgradeFailed, ...)
#   Ready Unknown or absent            Progressing

health := flux_health if {
	flux_kinds[input.object.apiVersion] == input.object.kind
}

flux_kinds := {
	"kustomize.toolkit.fluxcd.io/v1": "Kustomization",
	"helm.toolkit.fluxcd.io/v2": "HelmRelease",
}

flux_ready := health_condition(input.object, "Ready")

flux_health := {"state": "Suspended", "message": "suspended (spec.suspend)"} if {
	input.object.spec.suspend == true
} else := {"state": "Progressing", "message": "generation not yet observed by Flux"} if {
	health_generation_behind(input.object)
} else := {"state": "Degraded", "message": sprintf("stalled: %s", [health_text(c)])} if {
	c := health_condition(input.object, "Stalled")
	c.status == "True"
} else := {"state": "Progressing", "message": sprintf("reconciling: %s", [health_text(c)])} if {
	c := health_condition(input.object, "Reconciling")
	c.status == "True"
} else := {"state": "Healthy", "message": health_text(flux_ready)} if {
	flux_ready.status == "True"
} else := {"state": "Degraded", "message": sprintf("not ready: %s", [health_text(flux_ready)])} if {
	flux_ready.status == "False"
} else := {"state": "Progressing", "message": "waiting for Flux"}

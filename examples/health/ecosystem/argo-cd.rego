package driftguard

# Argo CD: an Application (argoproj.io/v1alpha1) reports the health of what
# it deploys in status.health.status (Healthy, Progressing, Degraded,
# Suspended, Missing, Unknown) and its sync in status.sync.status; the last
# sync operation is status.operationState.
#
#   last sync operation Failed or Error         Degraded, with its message
#   health Missing (its resources not there)    Progressing
#   health Healthy, sync OutOfSync              Progressing (a sync is due)
#   otherwise                                   the health Argo CD reports
#
# Argo CD's own Missing is not driftguard's (the Application exists), hence
# Progressing. A Guard that applies Applications should wait for them only
# with automated sync; without it, OutOfSync stays until a person syncs.

health := application_health if {
	input.object.apiVersion == "argoproj.io/v1alpha1"
	input.object.kind == "Application"
}

application_status := object.get(input.object, ["status", "health", "status"], "")

application_sync := object.get(input.object, ["status", "sync", "status"], "")

application_revision := sprintf(" at %s", [substring(input.object.status.sync.revision, 0, 7)]) if {
	input.object.status.sync.revision != ""
} else := ""

application_health := {"state": "Degraded", "message": sprintf("sync %s: %s", [lower(op.phase), object.get(op, "message", "no message")])} if {
	op := input.object.status.operationState
	op.phase in {"Failed", "Error"}
} else := {"state": "Progressing", "message": object.get(input.object.status.health, "message", "resources missing")} if {
	application_status == "Missing"
} else := {"state": "Progressing", "message": sprintf("healthy but %s%s", [application_sync, application_revision])} if {
	application_status == "Healthy"
	application_sync == "OutOfSync"
	input.object.spec.syncPolicy.automated
} else := {"state": application_status, "message": sprintf("%s%s", [object.get(input.object.status.health, "message", lower(application_status)), application_sync_note])} if {
	application_status in {"Healthy", "Progressing", "Degraded", "Suspended", "Unknown"}
} else := {"state": "Progressing", "message": "waiting for Argo CD to assess it"}

application_sync_note := sprintf(" (%s%s)", [application_sync, application_revision]) if {
	application_sync != ""
} else := ""

package driftguard

# Argo Workflows: a Workflow (argoproj.io/v1alpha1) runs to completion.
# status.phase is Pending, Running, Succeeded, Failed or Error; status.message
# says why it failed, status.progress how far it got ("2/5").
#
#   spec.suspend true (and not finished)  Suspended
#   Succeeded                             Healthy
#   Failed, Error                         Degraded, with status.message
#   Pending, Running, no phase yet        Progressing, with the progress

health := workflow_health if {
	input.object.apiVersion == "argoproj.io/v1alpha1"
	input.object.kind == "Workflow"
}

workflow_phase := object.get(input.object, ["status", "phase"], "")

workflow_progress := sprintf(" (progress %s)", [input.object.status.progress]) if {
	input.object.status.progress
} else := ""

workflow_health := {"state": "Healthy", "message": sprintf("succeeded%s", [workflow_progress])} if {
	workflow_phase == "Succeeded"
} else := {"state": "Degraded", "message": sprintf("%s: %s", [lower(workflow_phase), object.get(input.object.status, "message", "no message")])} if {
	workflow_phase in {"Failed", "Error"}
} else := {"state": "Suspended", "message": sprintf("suspended%s", [workflow_progress])} if {
	input.object.spec.suspend == true
} else := {"state": "Progressing", "message": "waiting for the workflow controller"} if {
	workflow_phase == ""
} else := {"state": "Progressing", "message": sprintf("%s%s", [lower(workflow_phase), workflow_progress])}

# Example policy: let SREs scale, with a warning.
#
# Like the default policy, except that a member of group "sre" may change
# nothing but the replica count of a Deployment or StatefulSet (the scale
# subresource, or an update whose only drift is /spec/replicas). The change is
# warned about rather than denied, and when the informer later sees the same
# drift (operation DRIFT, user taken from the guard's stamp) it is warned about
# again rather than reverted, so the new scale holds until Git is changed.
package driftguard

scalable_kinds := {"Deployment", "StatefulSet"}

decision := {
	"action": "allow",
	"reason": "the guard's own identity",
	"rule": "guard-identity",
} if {
	input.user.username in data.driftguard.config.guardUsers
} else := {
	"action": "allow",
	"reason": "cluster system controller",
	"rule": "system-controller",
} if {
	system_controller
} else := {
	"action": "warn",
	"reason": sprintf("%s scaled %s %s/%s by hand; put the replica count in Git (%s) or it stays drifted", [
		input.user.username, input.resource.kind, input.resource.namespace, input.resource.name, input.source.path,
	]),
	"rule": "sre-scaling",
} if {
	sre_scaling
} else := {
	"action": "allow",
	"reason": sprintf("break-glass by %s: %s", [input.user.username, break_glass_reason]),
	"rule": "break-glass",
	"temporary": true,
} if {
	some group in input.user.groups
	group in data.driftguard.config.breakGlassGroups
	break_glass_reason != ""
} else := {
	"action": "revert",
	"reason": "the object drifted from Git and is put back (self-heal)",
	"rule": "self-heal",
} if {
	input.operation == "DRIFT"
} else := {
	"action": "deny",
	"reason": "changes to objects managed by Git are not allowed",
	"rule": "managed-by-git",
}

system_controller if input.user.username in {"system:kube-controller-manager", "system:kube-scheduler", "system:apiserver"}

system_controller if {
	some prefix in {"system:serviceaccount:kube-system:", "system:node:"}
	startswith(input.user.username, prefix)
	count(input.user.username) > count(prefix)
}

break_glass_reason := trim_space(object.get(input, ["annotations", "driftguard.io/break-glass"], ""))

sre_scaling if {
	"sre" in input.user.groups
	input.operation in {"UPDATE", "DRIFT"}
	input.resource.kind in scalable_kinds
	only_replicas
}

# The scale subresource can change nothing but the replica count.
only_replicas if input.subResource == "scale"

only_replicas if {
	count(input.drift) > 0
	every change in input.drift {
		change.path == "/spec/replicas"
	}
}

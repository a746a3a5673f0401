# Example policy: Namespaces are deleted through Git only.
#
# Like the default policy, except that deleting a Namespace (which deletes
# everything in it) is denied for everyone but the guard itself, which prunes
# Namespaces that left Git. Break-glass and system controllers do not help. If
# a Namespace disappears anyway, the informer's DRIFT is reverted as usual.
package driftguard

decision := {
	"action": "allow",
	"reason": "the guard's own identity",
	"rule": "guard-identity",
} if {
	input.user.username in data.driftguard.config.guardUsers
} else := {
	"action": "deny",
	"reason": sprintf("Namespace %s is managed by Git and may only be deleted by removing it from Git (%s), even with break-glass", [
		input.resource.name, input.source.path,
	]),
	"rule": "protect-namespaces",
} if {
	namespace_delete
} else := {
	"action": "allow",
	"reason": "cluster system controller",
	"rule": "system-controller",
} if {
	system_controller
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

namespace_delete if {
	input.operation == "DELETE"
	input.resource.group == ""
	input.resource.kind == "Namespace"
}

system_controller if input.user.username in {"system:kube-controller-manager", "system:kube-scheduler", "system:apiserver"}

system_controller if {
	some prefix in {"system:serviceaccount:kube-system:", "system:node:"}
	startswith(input.user.username, prefix)
	count(input.user.username) > count(prefix)
}

break_glass_reason := trim_space(object.get(input, ["annotations", "driftguard.io/break-glass"], ""))

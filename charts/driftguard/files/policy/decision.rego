# The default driftguard policy.
#
# data.driftguard.decision is one object {"action", "reason", "rule"} (and
# "temporary": true where a change is kept only for the Guard's
# breakGlassTTL); the first matching rule of the else chain below wins:
#
#   1. guard-identity     the guard's own identities          -> allow
#   2. system-controller  cluster control-plane components    -> allow
#   3. break-glass        break-glass group + reason annotation -> allow,
#                         temporary
#   4. restores-git       an update that only puts back values
#                         Git sets                             -> allow
#   5. self-heal          drift seen after the fact           -> revert
#   6. orphan             a new object Git does not have, in a
#                         namespace a Guard owns              -> warn
#   7. managed-by-git     everything else                     -> deny
package driftguard

break_glass_annotation := "driftguard.io/break-glass"

decision := {
	"action": "allow",
	"reason": sprintf("%s is the guard's own identity", [input.user.username]),
	"rule": "guard-identity",
} if {
	guard_identity
} else := {
	"action": "allow",
	"reason": sprintf("%s is a cluster system controller", [input.user.username]),
	"rule": "system-controller",
} if {
	system_controller
} else := {
	"action": "allow",
	"reason": sprintf("break-glass by %s: %s", [input.user.username, break_glass_reason]),
	"rule": "break-glass",
	"temporary": true,
} if {
	break_glass_member
	break_glass_reason != ""
} else := {
	"action": "allow",
	"reason": "the change puts back values Git sets",
	"rule": "restores-git",
} if {
	restores_git
} else := {
	"action": "revert",
	"reason": "the object drifted from Git and is put back (self-heal)",
	"rule": "self-heal",
} if {
	input.operation == "DRIFT"
} else := {
	"action": "warn",
	"reason": sprintf("namespace %s is kept by Guard %s; an object made by hand there is neither guarded nor pruned", [input.resource.namespace, input.guard]),
	"rule": "orphan",
} if {
	input.orphan
} else := {
	"action": "deny",
	"reason": deny_reason,
	"rule": "managed-by-git",
}

guard_identity if input.user.username in data.driftguard.config.guardUsers

# Control-plane components that legitimately write to objects they own
# (status, scale by the HPA, node objects, kube-system service accounts),
# for the operations they need. Being in the group system:masters is
# deliberately not enough: a cluster admin is a person and goes through
# break-glass like everyone else.
system_users := {
	"system:kube-controller-manager",
	"system:kube-scheduler",
	"system:apiserver",
}

system_prefixes := {
	"system:serviceaccount:kube-system:",
	"system:node:",
}

system_identity if input.user.username in system_users

system_identity if {
	some prefix in system_prefixes
	startswith(input.user.username, prefix)
	count(input.user.username) > count(prefix)
}

# Deleting a managed object is the guard's (prune) or a person's with
# break-glass. Of the controllers only the namespace controller deletes one,
# emptying a namespace being deleted (as system:kube-controller-manager where
# controllers share one identity). The garbage collector never does: an owner
# reference someone added would otherwise be a side door around a denied
# delete.
delete_controllers := {
	"system:serviceaccount:kube-system:namespace-controller",
	"system:kube-controller-manager",
}

system_controller if {
	input.operation != "DELETE"
	system_identity
}

system_controller if {
	input.operation == "DELETE"
	input.user.username in delete_controllers
}

# An update each of whose changes writes the value Git sets: nothing it does
# can make the object differ from Git. Removing a field (even one Git does
# not set, which a controller may own) is not among them.
restores_git if {
	input.operation == "UPDATE"
	count(input.drift) > 0
	every c in input.drift {
		c.desired != null
		c.live == c.desired
	}
}

break_glass_member if {
	some group in input.user.groups
	group in data.driftguard.config.breakGlassGroups
}

break_glass_reason := trim_space(object.get(input, ["annotations", break_glass_annotation], ""))

# The webhook's denial message names the Git file and revision; the reason
# says why.
deny_reason := "changes to objects managed by Git are not allowed"

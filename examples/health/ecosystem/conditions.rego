package driftguard

# Helpers the ecosystem health rules share. Copy this file with any of them.

# health_condition(obj, t) is the condition of type t in obj's
# status.conditions; undefined when there is none.
health_condition(obj, t) := c if {
	some c in obj.status.conditions
	c.type == t
}

# health_text(c) is a condition's reason and message as one phrase.
health_text(c) := sprintf("%s: %s", [health_reason(c), health_message(c)]) if {
	health_reason(c) != ""
	health_message(c) != ""
} else := health_reason(c) if {
	health_reason(c) != ""
} else := health_message(c) if {
	health_message(c) != ""
} else := "no reason given"

health_reason(c) := trim_space(object.get(c, "reason", ""))

health_message(c) := trim_space(object.get(c, "message", ""))

# health_generation_behind(obj) holds while obj's controller has not yet
# seen its latest spec.
health_generation_behind(obj) if {
	obj.status.observedGeneration < obj.metadata.generation
}

package apply

import (
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
)

// AppliedBy returns the UID of a live object when it is what the guard
// applied for the Guard named guard: it carries that Guard's label and its
// managed fields hold an Apply entry of the guard's field manager.
//
// This is the inventory's second source, for objects that were in sync and
// not sent again. A manager name is not proof (anyone allowed to apply an
// object can apply it as "driftguard"), so it is trusted only for objects
// Git holds, which the guard would apply anyway: an object that left Git is
// deleted only with the UID the guard recorded while Git held it.
func AppliedBy(live *unstructured.Unstructured, guard string) (types.UID, bool) {
	if guard == "" || live.GetUID() == "" {
		return "", false
	}
	md, _ := live.Object["metadata"].(map[string]any)
	labels, _ := md["labels"].(map[string]any)
	if v, _ := labels[GuardLabel].(string); v != guard {
		return "", false
	}
	// In place: GetManagedFields would convert every entry.
	entries, _ := md["managedFields"].([]any)
	for _, e := range entries {
		m, _ := e.(map[string]any)
		if m["manager"] == FieldManager && m["operation"] == "Apply" && (m["subresource"] == nil || m["subresource"] == "") {
			return live.GetUID(), true
		}
	}
	return "", false
}

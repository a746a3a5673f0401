package reconcile

import (
	"github.com/driftguard/driftguard/api/v1alpha1"
	"github.com/driftguard/driftguard/apply"
	"github.com/driftguard/driftguard/render"
)

// objectName is how the status names the object of key.
func objectName(k render.ObjectKey) v1alpha1.ObjectName {
	return v1alpha1.ObjectName{Group: k.Group, Kind: k.Kind, Namespace: k.Namespace, Name: k.Name}
}

// objectNames is status.drifted: the names of keys, in their order.
func objectNames(keys []render.ObjectKey) []v1alpha1.ObjectName {
	if len(keys) == 0 {
		return nil
	}
	names := make([]v1alpha1.ObjectName, len(keys))
	for i, k := range keys {
		names[i] = objectName(k)
	}
	return names
}

// failedObjects is status.failed: up to maxFailedListed entries of cs that
// failed to apply, in apply order, with their errors.
func failedObjects(cs apply.ChangeSet) []v1alpha1.FailedObject {
	var failed []v1alpha1.FailedObject
	for _, e := range cs {
		if e.Err == nil || len(failed) == maxFailedListed {
			continue
		}
		f := v1alpha1.FailedObject{Error: e.Err.Error()}
		if e.Object != nil {
			f.ObjectName = objectName(e.Object.Key)
		}
		failed = append(failed, f)
	}
	return failed
}

// drifted returns the count and the listed names of the guard's drifted
// objects, as status.driftedObjects and status.drifted hold them.
func drifted(d DriftState, guard string) (int32, []v1alpha1.ObjectName) {
	n, keys := d.Drifted(guard, maxDriftedListed)
	return count32(n), objectNames(keys)
}

// maxInt32 caps the counts of the status (int32, see GuardStatus).
const maxInt32 = 1<<31 - 1

// count32 is n as a count of the status.
func count32(n int) int32 {
	return int32(min(n, maxInt32))
}

// orNull is list, or a JSON null that removes the field from a merge
// patch when list is empty.
func orNull[T any](list []T) any {
	if len(list) == 0 {
		return nil
	}
	return list
}

package reconcile

import (
	"slices"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/driftguard/driftguard/api/v1alpha1"
	"github.com/driftguard/driftguard/render"
)

// SyncStates is what the drift watcher knows of each managed object's
// sync state (selfheal.Watcher): OutOfSync with the paths that differ (nil
// when missing), Unknown with why it cannot be compared, or InSync.
type SyncStates interface {
	SyncState(gvk schema.GroupVersionKind, namespace, name string) (state v1alpha1.SyncState, paths []string, reason string)
}

// maxSyncListed bounds status.sync.objects.
const maxSyncListed = 20

// MissingPath stands for the paths of an object that does not exist.
const MissingPath = "missing"

// SummarizeSync returns the sync state of the objects of snap: the count
// of each state, and up to maxSyncListed objects that are not in sync,
// OutOfSync first, each state's in the order of their names. Nil when
// there is no snapshot or nothing knows the states.
func SummarizeSync(snap *render.Snapshot, states SyncStates) *v1alpha1.SyncSummary {
	if snap == nil || states == nil {
		return nil
	}
	sum := &v1alpha1.SyncSummary{}
	var listed []v1alpha1.ObjectSync
	for _, o := range snap.Objects {
		state, paths, reason := states.SyncState(o.GVK(), o.Key.Namespace, o.Key.Name)
		switch state {
		case v1alpha1.InSync:
			sum.InSync++
			continue
		case v1alpha1.OutOfSync:
			sum.OutOfSync++
			if paths == nil {
				paths = []string{MissingPath}
			}
			reason = ""
		default:
			state = v1alpha1.Unknown
			sum.Unknown++
			paths = nil
		}
		listed = append(listed, v1alpha1.ObjectSync{ObjectName: objectName(o.Key), State: state, Paths: slices.Clone(paths), Reason: reason})
	}
	slices.SortFunc(listed, func(a, b v1alpha1.ObjectSync) int {
		if a.State != b.State {
			if a.State == v1alpha1.OutOfSync {
				return -1
			}
			return 1
		}
		return render.CompareKeys(keyOf(a.ObjectName), keyOf(b.ObjectName))
	})
	if len(listed) > maxSyncListed {
		listed = listed[:maxSyncListed]
	}
	sum.Objects = listed
	return sum
}

// setSync writes the sync state of the Guard's published snapshot into
// its status, and into driftguard_objects.
func (r *GuardReconciler) setSync(g *v1alpha1.Guard) {
	states, ok := r.Drift.(SyncStates)
	if !ok {
		return
	}
	snap, _ := r.Store.Snapshot(g.Name)
	g.Status.Sync = SummarizeSync(snap, states)
	setSyncMetric(g.Name, g.Status.Sync)
}

// syncStateObjects is driftguard_objects: the managed objects of a Guard
// by sync state.
var syncStateObjects = prometheus.NewGaugeVec(prometheus.GaugeOpts{
	Name: "driftguard_objects",
	Help: "Managed objects of a Guard by sync state: InSync, OutOfSync (differ from Git or missing), Unknown (cannot be compared).",
}, []string{"guard", "state"})

func setSyncMetric(guard string, sum *v1alpha1.SyncSummary) {
	if sum == nil {
		syncStateObjects.DeletePartialMatch(prometheus.Labels{"guard": guard})
		return
	}
	syncStateObjects.WithLabelValues(guard, string(v1alpha1.InSync)).Set(float64(sum.InSync))
	syncStateObjects.WithLabelValues(guard, string(v1alpha1.OutOfSync)).Set(float64(sum.OutOfSync))
	syncStateObjects.WithLabelValues(guard, string(v1alpha1.Unknown)).Set(float64(sum.Unknown))
}

// syncPatch is the merge patch of status.sync: every field, so that an
// emptied list is removed.
func syncPatch(sum *v1alpha1.SyncSummary) any {
	if sum == nil {
		return nil
	}
	return map[string]any{"inSync": sum.InSync, "outOfSync": sum.OutOfSync, "unknown": sum.Unknown, "objects": orNull(sum.Objects)}
}

// keyOf is the key of the object the status names.
func keyOf(n v1alpha1.ObjectName) render.ObjectKey {
	return render.ObjectKey{Group: n.Group, Kind: n.Kind, Namespace: n.Namespace, Name: n.Name}
}

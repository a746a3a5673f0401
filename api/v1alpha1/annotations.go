package v1alpha1

import (
	"encoding/json"
	"time"
)

// Annotations driftguard reads or writes on managed objects.
const (
	// ChangedByAnnotation is stamped by the mutating webhook on an admitted
	// manual change, so the drift that follows names a person.
	ChangedByAnnotation = "driftguard.io/changed-by"
	// APIServerChangedByAnnotation is written by the API server itself
	// (the compiled MutatingAdmissionPolicy, --admission-mode=both) on every
	// update of a managed object: the user name of the last writer but the
	// guard. It carries no signature; the guard trusts it only while that
	// policy is in force.
	APIServerChangedByAnnotation = "driftguard.io/changed-by-apiserver"
	// BreakGlassAnnotation carries the reason of a break-glass change.
	BreakGlassAnnotation = "driftguard.io/break-glass"
	// EnforcementAnnotation, set in Git on an object, overrides its Guard's
	// enforcement: deny, revert, warn or off.
	EnforcementAnnotation = "driftguard.io/enforcement"
	// ForceAnnotation, "true" on an object in Git, recreates the object when
	// an update is refused because a field is immutable.
	ForceAnnotation = "driftguard.io/force"
	// SyncRequestedAnnotation on a Guard asks for a sync of the newest
	// revision now (manual sync, or a sync window's manualSync); any new
	// value is a new request. driftguard sync sets it to the time.
	SyncRequestedAnnotation = "driftguard.io/sync-requested"
	// ReconcileRequestedAnnotation on a Guard asks for a reconcile now,
	// under the Guard's own rules (its sync mode and windows still hold a
	// new revision); any new value is a new request, recorded as handled
	// in status.lastHandledReconcileAt. driftguard reconcile sets it to
	// the time.
	ReconcileRequestedAnnotation = "driftguard.io/reconcile-requested"
	// ReconcileSourceAnnotation, set to the same value as
	// ReconcileRequestedAnnotation (driftguard reconcile --with-source),
	// makes that request fetch and render the source's revision afresh even
	// when the status records it failed to render and its backoff has not
	// passed.
	ReconcileSourceAnnotation = "driftguard.io/reconcile-source"
	// ShardLabel on a Guard names the shard (--shard) that reconciles it.
	ShardLabel = "driftguard.io/shard"
)

// ChangedBy is the value of ChangedByAnnotation.
//
// +kubebuilder:object:generate=false
type ChangedBy struct {
	User       string    `json:"user"`
	Groups     []string  `json:"groups,omitempty"`
	Time       time.Time `json:"time"`
	RequestUID string    `json:"requestUID,omitempty"`
	// Manager is the field manager of the write (the request's, else the
	// managed-fields entry it changed), the writer's choice: self-heal
	// reads what an entry of that name owns as this writer's, whatever the
	// name.
	Manager string `json:"manager,omitempty"`
	// MAC proves the guard issued the stamp for this object (package stamp);
	// a stamp without a valid MAC is a claim, not an identity.
	MAC string `json:"mac,omitempty"`
}

// String encodes the stamp as the annotation value.
func (c ChangedBy) String() string {
	b, _ := json.Marshal(c)
	return string(b)
}

// ParseChangedBy decodes an annotation value; ok is false when it is not a stamp.
func ParseChangedBy(s string) (ChangedBy, bool) {
	var c ChangedBy
	if s == "" || json.Unmarshal([]byte(s), &c) != nil || c.User == "" {
		return ChangedBy{}, false
	}
	return c, true
}

package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Condition types a Guard reports.
const (
	// ConditionReady is True when the last revision was fetched, rendered and applied.
	ConditionReady = "Ready"
	// ConditionReconciling is True while a reconcile is in progress.
	ConditionReconciling = "Reconciling"
	// ConditionStalled is True when the Guard cannot progress without a change in Git or in its spec.
	ConditionStalled = "Stalled"
	// ConditionDegraded is True when self-heal stopped for objects another
	// field manager keeps changing back; the message names the manager and
	// the ignore rule to add.
	ConditionDegraded = "Degraded"
)

// GuardSpec is the desired behaviour of a Guard.
type GuardSpec struct {
	// URL of the Git repository (http, https, ssh or file).
	// +kubebuilder:validation:MinLength=1
	URL string `json:"url"`

	// Ref is a branch, a tag or a full commit SHA. Defaults to the remote HEAD.
	// +optional
	Ref string `json:"ref,omitempty"`

	// Path inside the repository whose manifests are applied. Defaults to the root.
	// +optional
	Path string `json:"path,omitempty"`

	// Interval between full reconciliations.
	// +kubebuilder:default="1m"
	// +optional
	Interval metav1.Duration `json:"interval,omitempty"`

	// Prune deletes objects that were applied from an earlier revision and have left Git.
	// +optional
	Prune bool `json:"prune,omitempty"`

	// SelfHeal reverts drift as soon as the informer sees it.
	// +kubebuilder:default=true
	// +optional
	SelfHeal *bool `json:"selfHeal,omitempty"`

	// Enforcement is what the admission webhook does with a manual change a
	// policy denies: deny it, only warn, or only record it (dryrun).
	// +kubebuilder:validation:Enum=deny;warn;dryrun
	// +kubebuilder:default=deny
	// +optional
	Enforcement Enforcement `json:"enforcement,omitempty"`

	// BreakGlassTTL is how long a break-glass change is kept before it is
	// reverted, unless Git adopts it first.
	// +kubebuilder:default="1h"
	// +optional
	BreakGlassTTL *metav1.Duration `json:"breakGlassTTL,omitempty"`

	// PolicyData is handed to the Rego policy as input.policyData, for rules
	// that differ per Guard (an owning team, a change window, a ticket prefix).
	// +optional
	PolicyData map[string]string `json:"policyData,omitempty"`

	// Ignore lists fields that are never drift, for objects the rule matches:
	// fields other controllers own (an HPA's replicas, injected sidecars).
	// +optional
	Ignore []IgnoreRule `json:"ignore,omitempty"`

	// SecretRef names a Secret in the guard's namespace with Git credentials
	// (keys username and password, or bearerToken).
	// +optional
	SecretRef *SecretReference `json:"secretRef,omitempty"`
}

// Enforcement modes of a Guard.
type Enforcement string

// Enforcement values.
const (
	EnforcementDeny   Enforcement = "deny"
	EnforcementWarn   Enforcement = "warn"
	EnforcementDryRun Enforcement = "dryrun"
)

// IgnoreRule hides fields from the comparison for the objects it matches.
// Empty match fields match everything.
type IgnoreRule struct {
	// Group of the objects (empty: any group).
	// +optional
	Group string `json:"group,omitempty"`
	// Kind of the objects (empty: any).
	// +optional
	Kind string `json:"kind,omitempty"`
	// Namespace of the objects (empty: any).
	// +optional
	Namespace string `json:"namespace,omitempty"`
	// Name of the objects (empty: any).
	// +optional
	Name string `json:"name,omitempty"`
	// JSONPointers (RFC 6901) of fields to ignore, e.g. /spec/replicas.
	// +optional
	JSONPointers []string `json:"jsonPointers,omitempty"`
	// JQPathExpressions select fields to ignore, e.g. .spec.template.spec.containers[] | select(.name == "istio-proxy").
	// +optional
	JQPathExpressions []string `json:"jqPathExpressions,omitempty"`
	// ManagedFieldsManagers: fields owned by these field managers (e.g. kube-controller-manager, an HPA) are ignored.
	// +optional
	ManagedFieldsManagers []string `json:"managedFieldsManagers,omitempty"`
}

// SecretReference names a Secret.
type SecretReference struct {
	// Name of the Secret.
	Name string `json:"name"`
	// Namespace of the Secret; defaults to the guard's own namespace.
	// +optional
	Namespace string `json:"namespace,omitempty"`
}

// GuardStatus is what a Guard observed.
type GuardStatus struct {
	// ObservedGeneration is the generation of the spec last reconciled.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// Conditions: Ready, Reconciling, Stalled.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// LastAppliedRevision is the commit SHA whose objects are in the cluster.
	// +optional
	LastAppliedRevision string `json:"lastAppliedRevision,omitempty"`

	// LastAttemptedRevision is the commit SHA of the last fetch, good or bad.
	// +optional
	LastAttemptedRevision string `json:"lastAttemptedRevision,omitempty"`

	// ManagedObjects counts the objects of the applied revision.
	// +optional
	ManagedObjects int `json:"managedObjects"`

	// DriftedObjects counts managed objects that differ from Git right now.
	// +optional
	DriftedObjects int `json:"driftedObjects"`

	// Drifted names up to 20 managed objects that differ from Git right now
	// (Kind namespace/name); driftedObjects has the full count.
	// +optional
	Drifted []string `json:"drifted,omitempty"`

	// Inventory lists the kinds applied from Git, so that objects of a kind that
	// left Git entirely are still found and pruned.
	// +optional
	Inventory []InventoryKind `json:"inventory,omitempty"`
}

// InventoryKind is one group/version/kind the guard has applied objects of.
type InventoryKind struct {
	Group   string `json:"group,omitempty"`
	Version string `json:"version"`
	Kind    string `json:"kind"`
}

// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Cluster,shortName=gd
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Revision",type=string,JSONPath=`.status.lastAppliedRevision`
// +kubebuilder:printcolumn:name="Drift",type=integer,JSONPath=`.status.driftedObjects`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
// +kubebuilder:printcolumn:name="Status",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].message`,priority=1

// Guard keeps the cluster equal to one Git source.
type Guard struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   GuardSpec   `json:"spec,omitempty"`
	Status GuardStatus `json:"status,omitempty"`
}

// SelfHealEnabled reports whether drift is reverted; it is on unless set false.
func (g *Guard) SelfHealEnabled() bool {
	return g.Spec.SelfHeal == nil || *g.Spec.SelfHeal
}

// +kubebuilder:object:root=true

// GuardList is a list of Guards.
type GuardList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Guard `json:"items"`
}

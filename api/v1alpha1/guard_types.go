package v1alpha1

import (
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
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
	// ConditionHealthy is True when every managed object (or every object in
	// spec.healthChecks) is Healthy; its reason is the aggregate health state.
	ConditionHealthy = "Healthy"
	// ConditionInSync is False when Git holds a revision that is not applied
	// yet: manual sync waiting for approval, or a sync window closed.
	ConditionInSync = "InSync"
	// ConditionAuditSinks is False while an audit sink of the guard fails
	// (a full disk, an API server refusing Events); absent while all work.
	ConditionAuditSinks = "AuditSinks"
	// ConditionSuspended is True while spec.suspend is: the Guard is not
	// reconciled and its drift is not reverted; absent otherwise.
	ConditionSuspended = "Suspended"
)

// GuardSpec is the desired behaviour of a Guard.
// +kubebuilder:validation:XValidation:rule="(has(self.git) ? 1 : 0) + (has(self.helmRepository) ? 1 : 0) + (has(self.oci) ? 1 : 0) + (has(self.bucket) ? 1 : 0) == 1",message="a Guard names exactly one source: spec.git, spec.helmRepository, spec.oci or spec.bucket"
type GuardSpec struct {
	// Git is a Git repository, a revision in it, a path and the Secret of
	// its credentials. See docs/sources.md.
	// +optional
	Git *GitSource `json:"git,omitempty"`

	// HelmRepository is a chart from a Helm chart repository (an HTTP(S)
	// index.yaml or an oci:// registry), rendered with spec.helm.
	// +optional
	HelmRepository *HelmRepositorySource `json:"helmRepository,omitempty"`

	// OCI is an OCI artifact holding manifests (driftguard push artifact,
	// flux push artifact).
	// +optional
	OCI *OCISource `json:"oci,omitempty"`

	// Bucket is a prefix of an S3-compatible bucket holding manifests.
	// +optional
	Bucket *BucketSource `json:"bucket,omitempty"`

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

	// Vars are substituted for ${NAME} and ${NAME:=default} in the rendered
	// manifests. A variable that is unset and has no default is an error.
	// +optional
	Vars map[string]string `json:"vars,omitempty"`

	// VarsFrom reads more variables from ConfigMaps and Secrets; later
	// entries win over earlier ones, spec.vars wins over all.
	// +optional
	VarsFrom []VarsReference `json:"varsFrom,omitempty"`

	// Helm renders a path that holds a Chart.yaml.
	// +optional
	Helm *HelmSpec `json:"helm,omitempty"`

	// Decryption decrypts SOPS-encrypted files in memory before rendering.
	// +optional
	Decryption *Decryption `json:"decryption,omitempty"`

	// CreateNamespace creates the namespaces that rendered objects live in
	// and that Git does not declare.
	// +optional
	CreateNamespace bool `json:"createNamespace,omitempty"`

	// Force recreates an object whose update the API server refuses because
	// a field is immutable. The annotation driftguard.io/force: "true" on an
	// object in Git does the same for that object alone.
	// +optional
	Force bool `json:"force,omitempty"`

	// AllowEmpty lets a revision that renders no objects prune everything
	// that was applied; without it such a revision is refused.
	// +optional
	AllowEmpty bool `json:"allowEmpty,omitempty"`

	// PruneLast deletes what left Git only after everything else was applied
	// and, with wait, is healthy.
	// +optional
	PruneLast bool `json:"pruneLast,omitempty"`

	// PrunePropagationPolicy is the deletion propagation of pruned objects.
	// +kubebuilder:validation:Enum=background;foreground;orphan
	// +kubebuilder:default=background
	// +optional
	PrunePropagationPolicy string `json:"prunePropagationPolicy,omitempty"`

	// Timeout bounds fetching, applying and, with wait, waiting for health.
	// Defaults to the interval.
	// +optional
	Timeout *metav1.Duration `json:"timeout,omitempty"`

	// Wait makes a reconcile wait until the applied objects (or those in
	// healthChecks) are healthy before the Guard is Ready.
	// +optional
	Wait bool `json:"wait,omitempty"`

	// HealthChecks lists the objects whose health makes the Guard healthy;
	// empty means every managed object.
	// +optional
	HealthChecks []ObjectReference `json:"healthChecks,omitempty"`

	// DependsOn names Guards that must be Ready and Healthy before this one
	// applies anything.
	// +optional
	DependsOn []string `json:"dependsOn,omitempty"`

	// Retry is how failed reconciles are retried.
	// +optional
	Retry *RetryPolicy `json:"retry,omitempty"`

	// Sync is auto (a new revision is applied when it is seen) or manual (a
	// new revision waits until driftguard sync, or the annotation
	// driftguard.io/sync-requested, asks for it). Self-heal does not depend
	// on it: drift is reverted to the last synced revision in both modes.
	// +kubebuilder:validation:Enum=auto;manual
	// +kubebuilder:default=auto
	// +optional
	Sync SyncMode `json:"sync,omitempty"`

	// SyncWindows restrict when revisions are applied: nothing is applied
	// outside every allow window (when there is one) or inside a deny window.
	// +optional
	SyncWindows []SyncWindow `json:"syncWindows,omitempty"`

	// Suspend stops reconciliation and self-heal of this Guard.
	// +optional
	Suspend bool `json:"suspend,omitempty"`

	// ServiceAccountName is the service account, in the guard's own
	// namespace, whose rights the Guard's writes use: apply, prune, dry
	// runs, health reads of its objects and self-heal's reverts impersonate
	// system:serviceaccount:<guard's namespace>:<serviceAccountName>. Empty:
	// the guard's --default-service-account, and without one the guard's
	// own identity. The namespace is always the guard's own: a Guard cannot
	// name another namespace's service account.
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$`
	// +optional
	ServiceAccountName string `json:"serviceAccountName,omitempty"`
}

// VarsReference names a ConfigMap or Secret whose data are variables.
type VarsReference struct {
	// Kind is ConfigMap or Secret.
	// +kubebuilder:validation:Enum=ConfigMap;Secret
	Kind string `json:"kind"`
	// Name of the object.
	Name string `json:"name"`
	// Namespace of the object; defaults to the guard's own namespace.
	// +optional
	Namespace string `json:"namespace,omitempty"`
	// Optional: a missing object is no error.
	// +optional
	Optional bool `json:"optional,omitempty"`
}

// HelmSpec says how a chart in Git is rendered.
type HelmSpec struct {
	// ReleaseName defaults to the Guard's name.
	// +optional
	ReleaseName string `json:"releaseName,omitempty"`
	// Namespace of the release; defaults to "default".
	// +optional
	Namespace string `json:"namespace,omitempty"`
	// ValuesFiles are paths relative to the chart folder, merged in order
	// over the chart's values.yaml.
	// +optional
	ValuesFiles []string `json:"valuesFiles,omitempty"`
	// ValuesFrom reads values from ConfigMaps and Secrets of the guard's
	// own namespace, merged in order over the values files and under
	// spec.helm.values. They are read as the Guard's identity
	// (spec.serviceAccountName) at every reconcile; values from a Secret
	// are secret (never in records, status, Events or diffs).
	// +kubebuilder:validation:MaxItems=32
	// +optional
	ValuesFrom []HelmValuesReference `json:"valuesFrom,omitempty"`
	// Values are merged last, over the values files and valuesFrom.
	// +optional
	// +kubebuilder:pruning:PreserveUnknownFields
	// +kubebuilder:validation:Schemaless
	Values *apiextensionsv1.JSON `json:"values,omitempty"`
	// PostRenderers change the chart's rendered templates (not its crds/)
	// before they are applied, in order.
	// +kubebuilder:validation:MaxItems=8
	// +optional
	PostRenderers []HelmPostRenderer `json:"postRenderers,omitempty"`
}

// HelmValuesReference names a ConfigMap or Secret, in the guard's own
// namespace, holding Helm values. There is no namespace field: a Guard
// cannot read another namespace's objects for its values.
type HelmValuesReference struct {
	// Kind is ConfigMap or Secret.
	// +kubebuilder:validation:Enum=ConfigMap;Secret
	Kind string `json:"kind"`
	// Name of the object, in the guard's own namespace.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`
	// ValuesKey is the key of the object's data to read; defaults to
	// values.yaml.
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[-._a-zA-Z0-9]+$`
	// +optional
	ValuesKey string `json:"valuesKey,omitempty"`
	// TargetPath, when set, puts the key's whole value, as a string, at
	// this dotted path of the values (a.b.c; a dot inside a name is
	// written \.) instead of reading the key as a YAML document of values.
	// +kubebuilder:validation:MaxLength=250
	// +optional
	TargetPath string `json:"targetPath,omitempty"`
	// Optional: a missing object or key is no error.
	// +optional
	Optional bool `json:"optional,omitempty"`
}

// HelmPostRenderer changes a chart's rendered objects.
type HelmPostRenderer struct {
	// Kustomize applies Kustomize patches.
	// +optional
	Kustomize *KustomizePostRenderer `json:"kustomize,omitempty"`
}

// KustomizePostRenderer is a list of Kustomize patches.
type KustomizePostRenderer struct {
	// Patches are strategic merge patches or JSON 6902 patches (a YAML or
	// JSON list of operations), each applied to the objects its target
	// selects, or to the object the patch names when it has no target.
	// +kubebuilder:validation:MaxItems=64
	// +optional
	Patches []KustomizePatch `json:"patches,omitempty"`
}

// KustomizePatch is one Kustomize patch and the objects it applies to.
type KustomizePatch struct {
	// Patch is the patch: a strategic merge patch (a partial object) or a
	// JSON 6902 patch (a list of operations).
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=65536
	Patch string `json:"patch"`
	// Target selects the objects to patch; required for a JSON 6902 patch.
	// +optional
	Target *PatchTarget `json:"target,omitempty"`
}

// PatchTarget selects objects by group, version, kind, name (each a
// regular expression), namespace, labels and annotations.
type PatchTarget struct {
	// +optional
	Group string `json:"group,omitempty"`
	// +optional
	Version string `json:"version,omitempty"`
	// +optional
	Kind string `json:"kind,omitempty"`
	// +optional
	Name string `json:"name,omitempty"`
	// +optional
	Namespace string `json:"namespace,omitempty"`
	// LabelSelector is a label selector (app=web,tier!=db).
	// +optional
	LabelSelector string `json:"labelSelector,omitempty"`
	// AnnotationSelector is a selector of annotations, written as a label
	// selector.
	// +optional
	AnnotationSelector string `json:"annotationSelector,omitempty"`
}

// Decryption names the keys that decrypt SOPS-encrypted files.
type Decryption struct {
	// Provider of the encryption; only sops.
	// +kubebuilder:validation:Enum=sops
	// +kubebuilder:default=sops
	// +optional
	Provider string `json:"provider,omitempty"`
	// SecretRef names a Secret whose keys ending in .agekey hold age
	// private keys.
	SecretRef SecretReference `json:"secretRef"`
}

// ObjectReference names one object.
type ObjectReference struct {
	// APIVersion, e.g. apps/v1.
	APIVersion string `json:"apiVersion"`
	// Kind, e.g. Deployment.
	Kind string `json:"kind"`
	// Namespace; empty for cluster-scoped objects.
	// +optional
	Namespace string `json:"namespace,omitempty"`
	// Name of the object.
	Name string `json:"name"`
}

// RetryPolicy retries failed reconciles with exponential backoff.
type RetryPolicy struct {
	// Limit of retries after which the Guard is Stalled until Git or its
	// spec changes; 0 retries without limit.
	// +optional
	Limit int32 `json:"limit,omitempty"`
	// Backoff between retries.
	// +optional
	Backoff *Backoff `json:"backoff,omitempty"`
}

// Backoff is an exponential backoff.
type Backoff struct {
	// Duration of the first wait.
	// +kubebuilder:default="5s"
	// +optional
	Duration *metav1.Duration `json:"duration,omitempty"`
	// Factor each wait is multiplied by.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:default=2
	// +optional
	Factor int32 `json:"factor,omitempty"`
	// MaxDuration caps a wait.
	// +kubebuilder:default="5m"
	// +optional
	MaxDuration *metav1.Duration `json:"maxDuration,omitempty"`
}

// SyncMode says whether new revisions apply on their own.
type SyncMode string

// Sync modes.
const (
	SyncAuto   SyncMode = "auto"
	SyncManual SyncMode = "manual"
)

// SyncWindow is a recurring time range in which revisions may (allow) or
// may not (deny) be applied.
type SyncWindow struct {
	// Kind is allow or deny.
	// +kubebuilder:validation:Enum=allow;deny
	Kind string `json:"kind"`
	// Schedule is a cron expression (minute hour day-of-month month
	// day-of-week) for when the window opens.
	// +kubebuilder:validation:MinLength=1
	Schedule string `json:"schedule"`
	// Duration the window stays open.
	Duration metav1.Duration `json:"duration"`
	// TimeZone of the schedule (IANA name); defaults to UTC.
	// +optional
	TimeZone string `json:"timeZone,omitempty"`
	// ManualSync lets a manual sync through while the window blocks.
	// +optional
	ManualSync bool `json:"manualSync,omitempty"`
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
	// A manager name is chosen by the writer: at admission such a rule hides
	// nothing unless the request comes from one of Users.
	// +optional
	ManagedFieldsManagers []string `json:"managedFieldsManagers,omitempty"`
	// Users are the identities, as the API server authenticates them (for
	// example system:serviceaccount:cert-manager:cert-manager-cainjector),
	// that write the fields of ManagedFieldsManagers. At admission, a change
	// by one of them to fields those managers own is not decided; the same
	// change by anyone else, under any manager name, is.
	// +optional
	Users []string `json:"users,omitempty"`
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
//
// Counts in the status (and the spec) are int32, as Kubernetes counts
// replicas: no Guard manages 2^31 objects. Generations are int64, as
// metadata.generation is.
type GuardStatus struct {
	// ObservedGeneration is the generation of the spec last reconciled.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// Conditions: Ready, Reconciling, Stalled, Healthy, InSync, Degraded,
	// AuditSinks, Suspended.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// LastAppliedRevision is the revision whose objects are in the
	// cluster: the full commit SHA (Git), TAG@sha256:DIGEST or
	// sha256:DIGEST (OCI), CHART@VERSION@sha256:DIGEST (Helm repository),
	// sha256:DIGEST of the object list (bucket). See docs/sources.md.
	// +optional
	LastAppliedRevision string `json:"lastAppliedRevision,omitempty"`

	// LastAttemptedRevision is the revision of the last fetch, good or
	// bad, in the same form.
	// +optional
	LastAttemptedRevision string `json:"lastAttemptedRevision,omitempty"`

	// ManagedObjects counts the objects of the applied revision.
	// +optional
	ManagedObjects int32 `json:"managedObjects"`

	// DriftedObjects counts managed objects that differ from Git right now.
	// +optional
	DriftedObjects int32 `json:"driftedObjects"`

	// Drifted names up to 20 managed objects that differ from Git right
	// now, in the order of kind, namespace and name; driftedObjects has the
	// full count.
	// +optional
	// +listType=atomic
	Drifted []ObjectName `json:"drifted,omitempty"`

	// Sync counts the managed objects by sync state (InSync, OutOfSync,
	// Unknown) and names up to 20 that are not in sync, with the paths
	// that differ or why they cannot be compared.
	// +optional
	Sync *SyncSummary `json:"sync,omitempty"`

	// Inventory lists the kinds applied from Git, so that objects of a kind that
	// left Git entirely are still found and pruned.
	// +optional
	Inventory []InventoryKind `json:"inventory,omitempty"`

	// PendingRevision is a revision Git holds that is not applied yet:
	// waiting for a manual sync or for a sync window.
	// +optional
	PendingRevision string `json:"pendingRevision,omitempty"`

	// LastHandledSyncRequest is the value of the driftguard.io/sync-requested
	// annotation the guard last acted on.
	// +optional
	LastHandledSyncRequest string `json:"lastHandledSyncRequest,omitempty"`

	// LastHandledReconcileAt is the value of the
	// driftguard.io/reconcile-requested annotation the guard last
	// reconciled for (driftguard reconcile waits for it).
	// +optional
	LastHandledReconcileAt string `json:"lastHandledReconcileAt,omitempty"`

	// Health is the aggregate health of the managed objects: Healthy,
	// Progressing, Degraded, Suspended, Missing or Unknown.
	// +optional
	Health string `json:"health,omitempty"`

	// Unhealthy names up to 20 objects that are not Healthy, with their
	// state and message; the Healthy condition's message has the count.
	// +optional
	// +listType=atomic
	Unhealthy []UnhealthyObject `json:"unhealthy,omitempty"`

	// Failed lists up to 20 objects that failed to apply at the last
	// reconcile, with the error (PartiallySynced).
	// +optional
	// +listType=atomic
	Failed []FailedObject `json:"failed,omitempty"`

	// Retries counts consecutive failed reconciles of the current revision.
	// +optional
	Retries int32 `json:"retries,omitempty"`

	// RenderFailure is the revision that last failed to render (or went
	// beyond a fetch or render limit) with this spec: a guard that did not
	// see it fail (a new leader, a restarted process) reports its error
	// without rendering it again until the revision or the spec changes, a
	// sync is requested, or its backoff has passed.
	// +optional
	RenderFailure *RenderFailure `json:"renderFailure,omitempty"`
}

// SyncState is whether a managed object is as Git says.
// +kubebuilder:validation:Enum=InSync;OutOfSync;Unknown
type SyncState string

// Sync states of a managed object.
const (
	// InSync: the live object is as Git says.
	InSync SyncState = "InSync"
	// OutOfSync: it differs from Git (paths), or it is missing.
	OutOfSync SyncState = "OutOfSync"
	// Unknown: it cannot be compared (reason): its kind is not served or
	// not watched yet, or its live state has not been read yet.
	Unknown SyncState = "Unknown"
)

// SyncSummary is the sync state of a Guard's managed objects.
type SyncSummary struct {
	InSync    int32 `json:"inSync"`
	OutOfSync int32 `json:"outOfSync"`
	Unknown   int32 `json:"unknown"`
	// Objects names up to 20 objects OutOfSync or Unknown, OutOfSync
	// first; the counts are complete.
	// +optional
	// +listType=atomic
	Objects []ObjectSync `json:"objects,omitempty"`
}

// ObjectSync is the sync state of one managed object that is not in sync.
type ObjectSync struct {
	ObjectName `json:",inline"`
	State      SyncState `json:"state"`
	// Paths are the JSON pointers that differ (up to 10; "missing" when
	// the object does not exist). Never values.
	// +optional
	// +listType=atomic
	Paths []string `json:"paths,omitempty"`
	// Reason says why an Unknown object cannot be compared.
	// +optional
	Reason string `json:"reason,omitempty"`
}

// ObjectName names a managed object in the status.
type ObjectName struct {
	// Group is the API group; empty for the core group.
	// +optional
	Group string `json:"group,omitempty"`
	// Kind, e.g. Deployment.
	Kind string `json:"kind"`
	// Namespace; empty for a cluster-scoped object.
	// +optional
	Namespace string `json:"namespace,omitempty"`
	// Name of the object.
	Name string `json:"name"`
}

// UnhealthyObject is a managed object that is not Healthy.
type UnhealthyObject struct {
	ObjectName `json:",inline"`
	// State is Progressing, Degraded, Suspended, Missing or Unknown.
	State string `json:"state"`
	// Message says why, e.g. "2 of 3 replicas ready".
	// +optional
	Message string `json:"message,omitempty"`
}

// FailedObject is an object that failed to apply.
type FailedObject struct {
	ObjectName `json:",inline"`
	// Error is why, as the API server (or the guard) said it.
	Error string `json:"error"`
}

// RenderFailure is a revision that failed to render.
type RenderFailure struct {
	// Revision is the revision that failed.
	Revision string `json:"revision"`
	// ObservedGeneration is the generation of the spec it failed with.
	ObservedGeneration int64 `json:"observedGeneration"`
	// Message is the error.
	Message string `json:"message"`
	// Failures counts the renders of the revision with this spec that
	// failed; the backoff doubles with each (the Guard's interval after the
	// first, at most an hour).
	Failures int32 `json:"failures"`
	// LastFailure is when it last failed.
	LastFailure metav1.Time `json:"lastFailure"`
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
// +kubebuilder:printcolumn:name="Health",type=string,JSONPath=`.status.health`
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

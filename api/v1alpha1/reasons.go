package v1alpha1

// Reasons of the Ready condition, and of Stalled when the Guard cannot go on
// without a change in Git or in its spec. A failure retried with backoff
// (reconciled again later) is Ready False with its reason and Reconciling
// True with ReasonRetryingAfterError; past spec.retry.limit it is Stalled
// with the same reason.
const (
	// ReasonReconciliationSucceeded: Ready True, the revision is applied
	// (and healthy, with spec.wait).
	ReasonReconciliationSucceeded = "ReconciliationSucceeded"
	// ReasonObjectConflict: Ready False after an apply that left out
	// objects another Guard manages; the message names them and the Guard.
	ReasonObjectConflict = "ObjectConflict"
	// ReasonProgressing: Reconciling True while a revision is applied; with
	// spec.wait, Ready False too while its objects are not healthy yet,
	// until spec.timeout.
	ReasonProgressing = "Progressing"
	// ReasonDependencyNotReady: Ready False while a Guard of spec.dependsOn
	// is not Ready and Healthy at its current generation.
	ReasonDependencyNotReady = "DependencyNotReady"
	// ReasonDependencyCycle: Stalled, spec.dependsOn of the Guards makes a
	// cycle; the message names it.
	ReasonDependencyCycle = "DependencyCycle"
	// ReasonServiceAccountNotFound: Ready False, the service account the
	// Guard's writes act as does not exist or cannot be read; nothing is
	// applied.
	ReasonServiceAccountNotFound = "ServiceAccountNotFound"
	// ReasonInvalidServiceAccount: Ready False, the service account named
	// cannot be used (it is the guard's own, or no client impersonates it).
	ReasonInvalidServiceAccount = "InvalidServiceAccount"
	// ReasonForbidden: Ready False, the Guard's service account may not
	// write an object of the revision; the message names the account, verb,
	// resource and namespace.
	ReasonForbidden = "Forbidden"
	// ReasonInvalidName: Stalled, the Guard's name is longer than 63
	// characters and cannot be a label value.
	ReasonInvalidName = "InvalidName"
	// ReasonInvalidIgnoreRule: Stalled, an ignore rule of the spec does not
	// parse.
	ReasonInvalidIgnoreRule = "InvalidIgnoreRule"
	// ReasonInvalidSyncWindow: Stalled, a sync window of the spec does not
	// parse.
	ReasonInvalidSyncWindow = "InvalidSyncWindow"
	// ReasonInvalidSource: Stalled, the spec names no source or two.
	ReasonInvalidSource = "InvalidSource"
	// ReasonAuthFailed: Ready False, the Secret of the source's credentials
	// cannot be read; retried.
	ReasonAuthFailed = "AuthFailed"
	// ReasonRenderSettingsFailed: Ready False, a ConfigMap or Secret of
	// varsFrom, helm.valuesFrom or decryption cannot be read; retried.
	ReasonRenderSettingsFailed = "RenderSettingsFailed"
	// ReasonFetchFailed: Ready False, the source did not answer or refused
	// the fetch; retried, the revision in force stays.
	ReasonFetchFailed = "FetchFailed"
	// ReasonRenderFailed: Stalled, the newest revision does not render; the
	// message names the file and line, the revision in force stays.
	ReasonRenderFailed = "RenderFailed"
	// ReasonEmptyRevision: Stalled, the revision renders no objects (or
	// only hooks) while objects are applied and spec.allowEmpty is false;
	// nothing is pruned.
	ReasonEmptyRevision = "EmptyRevision"
	// ReasonInvalidSyncOrder: Stalled, a wave or hook annotation of the
	// revision cannot be read; the revision in force stays.
	ReasonInvalidSyncOrder = "InvalidSyncOrder"
	// ReasonApplyFailed: Ready False, no object of the revision was
	// applied; retried.
	ReasonApplyFailed = "ApplyFailed"
	// ReasonPartiallySynced: Ready False, some objects of the revision
	// failed to apply and the rest are applied; retried.
	ReasonPartiallySynced = "PartiallySynced"
	// ReasonHookFailed: Ready False, a hook of the sync failed; retried.
	ReasonHookFailed = "HookFailed"
	// ReasonHealthCheckFailed: Ready False, the applied objects (or a
	// wave's) did not become healthy within spec.timeout; retried.
	ReasonHealthCheckFailed = "HealthCheckFailed"
	// ReasonPruneFailed: Ready False, objects that left Git could not be
	// deleted; retried.
	ReasonPruneFailed = "PruneFailed"
	// ReasonInventoryFailed: Ready False, the inventory of what the Guard
	// applied could not be read or written; retried.
	ReasonInventoryFailed = "InventoryFailed"
)

// Reasons of the InSync condition.
const (
	// ReasonSynced: InSync True, the newest revision is the one applied.
	ReasonSynced = "Synced"
	// ReasonManualSyncRequired: InSync False (and Ready False before any
	// revision is applied), a new revision waits for a manual sync
	// (spec.sync manual).
	ReasonManualSyncRequired = "ManualSyncRequired"
	// ReasonSyncWindowClosed: InSync False (and Ready False before any
	// revision is applied), a new revision waits for a sync window.
	ReasonSyncWindowClosed = "SyncWindowClosed"
)

// Reasons of the Reconciling, Degraded, AuditSinks and Suspended
// conditions.
const (
	// ReasonRetryingAfterError: Reconciling True while a failure is retried
	// with backoff; Ready holds the failure's reason.
	ReasonRetryingAfterError = "RetryingAfterError"
	// ReasonFightingOtherManager: Degraded True, self-heal stopped reverting
	// objects another field manager keeps changing back.
	ReasonFightingOtherManager = "FightingOtherManager"
	// ReasonSinkFailing: AuditSinks False, an audit sink of the guard fails.
	ReasonSinkFailing = "SinkFailing"
	// ReasonSuspended: Suspended True, spec.suspend is true.
	ReasonSuspended = "Suspended"
)

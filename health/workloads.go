package health

// deployment: paused is Suspended; a Progressing condition with reason
// ProgressDeadlineExceeded, or a True ReplicaFailure, is Degraded; otherwise
// Healthy once the rollout is complete (every replica updated, no old one
// left, all available), ready replicas equal the desired count and the
// Available condition is not False. With a lookup, its pods are read too
// (deploymentWithPods).
func deployment(f *fields) Result {
	if f.boolean("spec", "paused") {
		return Result{State: Suspended, Message: "rollout paused"}
	}
	if r, ok := generationBehind(f); ok {
		return r
	}
	conds := f.conditions()
	if c, ok := findCondition(conds, "Progressing"); ok && c.Reason == "ProgressDeadlineExceeded" {
		return Result{State: Degraded, Message: "progress deadline exceeded: " + orDefault(c.Message, "the rollout made no progress")}
	}
	if c, ok := findCondition(conds, "ReplicaFailure"); ok && c.Status == "True" {
		return Result{State: Degraded, Message: "replica failure: " + orDefault(c.text(), "pods cannot be created")}
	}
	if r, ok := deploymentCounts(f); ok {
		return r
	}
	if c, ok := findCondition(conds, "Available"); ok && c.Status == "False" {
		// As kstatus: the counts may be complete for a moment while the
		// controller says the Deployment lacks its minimum availability.
		return Result{State: Progressing, Message: "not available: " + orDefault(c.text(), "no reason given")}
	}
	desired := f.intOr(1, "spec", "replicas")
	if desired == 0 {
		// No replica left in the status (every old one gone): no pod to
		// read (Result.NoPods).
		return Result{State: Healthy, Message: "scaled to zero", NoPods: f.intOr(0, "status", "replicas") == 0}
	}
	return result(Healthy, "%d of %d replicas ready", f.intOr(0, "status", "readyReplicas"), desired)
}

// deploymentCounts returns Progressing while the replica counts of a
// Deployment's status say its rollout is not complete.
func deploymentCounts(f *fields) (Result, bool) {
	desired := f.intOr(1, "spec", "replicas")
	replicas := f.intOr(0, "status", "replicas")
	updated := f.intOr(0, "status", "updatedReplicas")
	available := f.intOr(0, "status", "availableReplicas")
	ready := f.intOr(0, "status", "readyReplicas")
	switch {
	case updated < desired:
		return result(Progressing, "%d of %d replicas updated", updated, desired), true
	case replicas > updated:
		return result(Progressing, "%s pending termination", plural(replicas-updated, "old replica")), true
	case available < updated:
		return result(Progressing, "%d of %d updated replicas available", available, updated), true
	case ready < desired:
		return result(Progressing, "%d of %d replicas ready", ready, desired), true
	}
	return Result{}, false
}

// statefulSet: Healthy once every replica is updated to the update revision
// (down to the partition of a partitioned rolling update; not checked with
// the OnDelete strategy), ready and available.
func statefulSet(f *fields) Result {
	if r, ok := generationBehind(f); ok {
		return r
	}
	desired := f.intOr(1, "spec", "replicas")
	ready := f.intOr(0, "status", "readyReplicas")
	updated := f.intOr(0, "status", "updatedReplicas")
	current := f.intOr(0, "status", "currentReplicas")
	rollingUpdate := orDefault(f.str("spec", "updateStrategy", "type"), "RollingUpdate") == "RollingUpdate"
	partition := f.intOr(0, "spec", "updateStrategy", "rollingUpdate", "partition")
	currentRev, updateRev := f.str("status", "currentRevision"), f.str("status", "updateRevision")
	switch {
	case rollingUpdate && partition > 0 && updated < desired-partition:
		return result(Progressing, "%d of %d replicas updated (partition %d)", updated, desired-partition, partition)
	case rollingUpdate && partition <= 0 && currentRev != "" && updateRev != "" && currentRev != updateRev:
		return result(Progressing, "%d of %d replicas updated", updated, desired)
	case ready < desired:
		return result(Progressing, "%d of %d replicas ready", ready, desired)
	}
	if available, ok := f.int("status", "availableReplicas"); ok && available < desired {
		return result(Progressing, "%d of %d replicas available", available, desired)
	}
	if rollingUpdate && partition <= 0 && (updated < desired || current < desired) {
		return result(Progressing, "%d of %d replicas updated", min(updated, current), desired)
	}
	switch {
	case desired == 0:
		return Result{State: Healthy, Message: "scaled to zero"}
	case rollingUpdate && partition > 0:
		return result(Healthy, "%d of %d replicas ready, %d updated (partition %d)", ready, desired, updated, partition)
	}
	return result(Healthy, "%d of %d replicas ready", ready, desired)
}

// daemonSet: Healthy once a pod is scheduled on every node that should run
// one, all updated (not checked with the OnDelete strategy), ready and
// available.
func daemonSet(f *fields) Result {
	if r, ok := generationBehind(f); ok {
		return r
	}
	desired := f.intOr(0, "status", "desiredNumberScheduled")
	current := f.intOr(0, "status", "currentNumberScheduled")
	updated := f.intOr(0, "status", "updatedNumberScheduled")
	ready := f.intOr(0, "status", "numberReady")
	available := f.intOr(0, "status", "numberAvailable")
	onDelete := f.str("spec", "updateStrategy", "type") == "OnDelete"
	switch {
	case current < desired:
		return result(Progressing, "%d of %d pods scheduled", current, desired)
	case !onDelete && updated < desired:
		return result(Progressing, "%d of %d pods updated", updated, desired)
	case ready < desired:
		return result(Progressing, "%d of %d pods ready", ready, desired)
	case available < desired:
		return result(Progressing, "%d of %d pods available", available, desired)
	case desired == 0:
		return Result{State: Healthy, Message: "no node to run on"}
	}
	return result(Healthy, "%d of %d pods ready", ready, desired)
}

package health

// job: a True Failed (or FailureTarget) condition is Degraded, a True
// Complete condition Healthy; otherwise a suspended Job is Suspended and any
// other is Progressing (running, or waiting to start).
func job(f *fields) Result {
	conds := f.conditions()
	for _, t := range []string{"Failed", "FailureTarget"} {
		if c, ok := findCondition(conds, t); ok && c.Status == "True" {
			return Result{State: Degraded, Message: "failed: " + orDefault(c.text(), "no reason given")}
		}
	}
	succeeded := f.intOr(0, "status", "succeeded")
	if c, ok := findCondition(conds, "Complete"); ok && c.Status == "True" {
		return result(Healthy, "completed (%s)", plural(succeeded, "pod")+" succeeded")
	}
	if f.boolean("spec", "suspend") {
		return Result{State: Suspended, Message: "suspended"}
	}
	active := f.intOr(0, "status", "active")
	failed := f.intOr(0, "status", "failed")
	return result(Progressing, "running: %d active, %d succeeded, %d failed", active, succeeded, failed)
}

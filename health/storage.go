package health

// persistentVolumeClaim: Bound is Healthy, Lost Degraded, Pending (or no
// phase yet) Progressing.
func persistentVolumeClaim(f *fields) Result {
	volume := f.str("spec", "volumeName")
	switch phase := f.str("status", "phase"); phase {
	case "Bound":
		return result(Healthy, "bound to volume %s", volume)
	case "Lost":
		if volume == "" {
			return Result{State: Degraded, Message: "lost: its volume no longer exists"}
		}
		return result(Degraded, "lost: volume %s no longer exists", volume)
	case "Pending", "":
		return Result{State: Progressing, Message: "pending: waiting for a volume"}
	default:
		return result(Unknown, "unknown phase %q", phase)
	}
}

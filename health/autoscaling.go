package health

import (
	"encoding/json"
	"fmt"
)

// HPAConditionsAnnotation is where an autoscaling/v1 HorizontalPodAutoscaler
// carries its conditions: v1 has no status.conditions, so the API server
// serves them from v2 as JSON in this annotation.
const HPAConditionsAnnotation = "autoscaling.alpha.kubernetes.io/conditions"

// horizontalPodAutoscaler reads the conditions the autoscaler controller
// sets (autoscaling/v2 status.conditions, or v1's annotation):
//
//   - AbleToScale False (the target cannot be read or scaled, e.g.
//     FailedGetScale when it does not exist): Degraded.
//   - ScalingActive False: Suspended when the reason is ScalingDisabled
//     (the target is scaled to zero, which turns autoscaling off);
//     otherwise Degraded (metrics unavailable, an invalid selector).
//   - Neither set yet: Progressing, waiting for the controller.
//   - Either Unknown: Progressing.
//   - Both True: Healthy, with the replica counts and, when ScalingLimited
//     is True, the limit it is held at (which is not a failure).
func horizontalPodAutoscaler(f *fields) Result {
	if r, ok := generationBehind(f); ok {
		return r
	}
	conds := f.conditions()
	if len(conds) == 0 {
		conds = hpaAnnotationConditions(f)
	}
	if f.err != nil {
		return Result{}
	}
	able, hasAble := findCondition(conds, "AbleToScale")
	active, hasActive := findCondition(conds, "ScalingActive")
	switch {
	case hasAble && able.Status == "False":
		return Result{State: Degraded, Message: "cannot scale: " + orDefault(able.text(), "no reason given")}
	case hasActive && active.Status == "False" && active.Reason == "ScalingDisabled":
		return Result{State: Suspended, Message: "scaling disabled: " + orDefault(active.Message, active.Reason)}
	case hasActive && active.Status == "False":
		return Result{State: Degraded, Message: "scaling not active: " + orDefault(active.text(), "no reason given")}
	case !hasAble && !hasActive:
		return Result{State: Progressing, Message: "waiting for the autoscaler controller to assess it"}
	case hasAble && able.Status != "True":
		return Result{State: Progressing, Message: "ability to scale unknown: " + orDefault(able.text(), "no reason given")}
	case hasActive && active.Status != "True":
		return Result{State: Progressing, Message: "scaling activity unknown: " + orDefault(active.text(), "no reason given")}
	}
	msg := fmt.Sprintf("%d current, %d desired replicas (min %d, max %d)",
		f.intOr(0, "status", "currentReplicas"), f.intOr(0, "status", "desiredReplicas"),
		f.intOr(1, "spec", "minReplicas"), f.intOr(0, "spec", "maxReplicas"))
	if c, ok := findCondition(conds, "ScalingLimited"); ok && c.Status == "True" {
		msg += "; limited: " + orDefault(c.text(), "at a bound")
	}
	return Result{State: Healthy, Message: msg}
}

// hpaAnnotationConditions reads the conditions of an autoscaling/v1
// HorizontalPodAutoscaler from HPAConditionsAnnotation; JSON that does not
// decode is a field error naming the annotation.
func hpaAnnotationConditions(f *fields) []condition {
	raw := f.str("metadata", "annotations", HPAConditionsAnnotation)
	if raw == "" {
		return nil
	}
	path := []string{"metadata", "annotations[" + HPAConditionsAnnotation + "]"}
	var items []map[string]any
	if err := json.Unmarshal([]byte(raw), &items); err != nil {
		if f.err == nil {
			f.err = fmt.Errorf("%s: %w", path[0]+"."+path[1], err)
		}
		return nil
	}
	return f.conditionsAt(path, items)
}

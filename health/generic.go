package health

import (
	"encoding/json"
	"math"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/cli-utils/pkg/kstatus/status"
)

// generic assesses a kind without a rule of its own: custom resources, and
// the built-in kinds kstatus knows (ReplicaSet, PodDisruptionBudget,
// CustomResourceDefinition, CronJob).
//
//  1. spec.suspend true: Suspended.
//  2. status.observedGeneration behind metadata.generation: Progressing.
//  3. The Ready condition, else Available, else Progressing (see
//     fromConditions).
//  4. kstatus (Reconciling and Stalled conditions, the built-in kinds it
//     knows, and Healthy for an object with no status at all).
func generic(o object) Result {
	// Lenient on purpose: spec.suspend of a custom resource may mean
	// something else and have another type.
	if v, _ := o.f.get("spec", "suspend"); v == true {
		return Result{State: Suspended, Message: "suspended (spec.suspend is true)"}
	}
	if r, ok := generationBehind(o.f); ok {
		return r
	}
	if r, ok := fromConditions(o.f.conditions()); ok {
		return r
	}
	if o.f.err != nil {
		return Result{}
	}
	return fromKstatus(o.u)
}

// fromConditions reads the conditions custom resources commonly carry.
//
//   - Ready True: Healthy. False: Degraded, or Progressing when its reason
//     says the object is on its way (progressingReason). Unknown: Progressing.
//   - Available (no Ready): True: Healthy. False: Progressing when a
//     Progressing condition is True or its reason says so, else Degraded.
//     Unknown: Progressing.
//   - Progressing (neither): True: Progressing, unless its reason says it is
//     done (NewReplicaSetAvailable, Complete, Completed, Succeeded). False:
//     Degraded when its reason names a failure (deadline, fail, error),
//     else Healthy.
func fromConditions(conds []condition) (Result, bool) {
	progressing, hasProgressing := findCondition(conds, "Progressing")
	if c, ok := findCondition(conds, "Ready"); ok {
		switch c.Status {
		case "True":
			return Result{State: Healthy, Message: orDefault(c.text(), "ready")}, true
		case "False":
			if progressingReason(c.Reason) {
				return Result{State: Progressing, Message: "not ready: " + orDefault(c.text(), "no reason given")}, true
			}
			return Result{State: Degraded, Message: "not ready: " + orDefault(c.text(), "no reason given")}, true
		default:
			return Result{State: Progressing, Message: "readiness unknown: " + orDefault(c.text(), "no reason given")}, true
		}
	}
	if c, ok := findCondition(conds, "Available"); ok {
		switch c.Status {
		case "True":
			return Result{State: Healthy, Message: orDefault(c.text(), "available")}, true
		case "False":
			if progressingReason(c.Reason) || (hasProgressing && progressing.Status == "True") {
				return Result{State: Progressing, Message: "not available: " + orDefault(c.text(), "no reason given")}, true
			}
			return Result{State: Degraded, Message: "not available: " + orDefault(c.text(), "no reason given")}, true
		default:
			return Result{State: Progressing, Message: "availability unknown: " + orDefault(c.text(), "no reason given")}, true
		}
	}
	if hasProgressing {
		c := progressing
		switch c.Status {
		case "True":
			if doneReasons[c.Reason] {
				return Result{State: Healthy, Message: orDefault(c.text(), "done")}, true
			}
			return Result{State: Progressing, Message: orDefault(c.text(), "progressing")}, true
		case "False":
			if failureReason(c.Reason) {
				return Result{State: Degraded, Message: "not progressing: " + orDefault(c.text(), "no reason given")}, true
			}
			return Result{State: Healthy, Message: orDefault(c.text(), "done")}, true
		default:
			return Result{State: Progressing, Message: orDefault(c.text(), "progress unknown")}, true
		}
	}
	return Result{}, false
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// progressingWords mark a reason of a False Ready condition as "not yet"
// rather than "failed".
var progressingWords = []string{
	"progress", "reconcil", "pending", "creating", "updating", "upgrading", "installing",
	"initializ", "provisioning", "deploying", "starting", "scaling", "waiting", "dependency",
}

func progressingReason(reason string) bool {
	r := strings.ToLower(reason)
	for _, w := range progressingWords {
		if strings.Contains(r, w) {
			return true
		}
	}
	return false
}

var doneReasons = map[string]bool{"NewReplicaSetAvailable": true, "Complete": true, "Completed": true, "Succeeded": true}

func failureReason(reason string) bool {
	r := strings.ToLower(reason)
	return strings.Contains(r, "deadline") || strings.Contains(r, "fail") || strings.Contains(r, "error")
}

// fromKstatus maps the status kstatus computes to a State.
func fromKstatus(u *unstructured.Unstructured) Result {
	res, err := status.Compute(u)
	if err != nil {
		// kstatus reads integers only as int64; the object may hold them as
		// float64 or json.Number (a plain JSON decode). Try once with int64s.
		res, err = status.Compute(&unstructured.Unstructured{Object: int64Numbers(u.Object).(map[string]any)})
		if err != nil {
			return Result{State: Unknown, Message: "cannot compute status: " + err.Error()}
		}
	}
	msg := res.Message
	var s State
	switch res.Status {
	case status.CurrentStatus:
		s = Healthy
	case status.InProgressStatus:
		s = Progressing
	case status.FailedStatus:
		s = Degraded
	case status.TerminatingStatus:
		s, msg = Progressing, "terminating"
	case status.NotFoundStatus:
		s = Missing
	default:
		s = Unknown
	}
	return Result{State: s, Message: msg}
}

// int64Numbers returns a copy of v with every integral number an int64.
func int64Numbers(v any) any {
	switch x := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = int64Numbers(e)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = int64Numbers(e)
		}
		return out
	case float64:
		if x == math.Trunc(x) && math.Abs(x) < 1<<53 {
			return int64(x)
		}
	case json.Number:
		if i, err := x.Int64(); err == nil {
			return i
		}
		if f, err := x.Float64(); err == nil {
			return f
		}
	case int:
		return int64(x)
	case int32:
		return int64(x)
	}
	return v
}

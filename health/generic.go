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
//  4. kstatus, for the Reconciling and Stalled conditions and the built-in
//     kinds it has rules for.
//  5. status.health.status (Argo CD's Application and its like): the state
//     it names, with status.health.message.
//  6. status.phase, when it is a value whose meaning is common (see
//     phaseStates).
//  7. status.observedGeneration equal to metadata.generation: Healthy, its
//     controller has seen the latest spec and reports nothing wrong.
//  8. Otherwise NoHealth for a custom resource, or Healthy "exists" for a
//     built-in kind (its API group is Kubernetes' own) with no status.
func generic(o object) Result {
	f := o.f
	// Lenient on purpose: spec.suspend of a custom resource may mean
	// something else and have another type.
	if v, _ := f.get("spec", "suspend"); v == true {
		return Result{State: Suspended, Message: "suspended (spec.suspend is true)"}
	}
	if r, ok := generationBehind(f); ok {
		return r
	}
	conds := f.conditions()
	if r, ok := fromConditions(conds); ok {
		return r
	}
	if f.err != nil {
		return Result{}
	}
	_, reconciling := findCondition(conds, "Reconciling")
	_, stalled := findCondition(conds, "Stalled")
	if reconciling || stalled || kstatusKinds[o.u.GroupVersionKind().GroupKind().String()] {
		return fromKstatus(o.u)
	}
	if r, ok := fromHealthField(f); ok {
		return r
	}
	phase := ""
	if v, ok := f.get("status", "phase"); ok {
		// Lenient: a custom resource's phase may be of another type.
		phase, _ = v.(string)
	}
	if r, ok := fromPhase(phase, f); ok {
		return r
	}
	if gen, ok := f.int("metadata", "generation"); ok {
		if observed, ok := f.int("status", "observedGeneration"); ok && observed >= gen {
			return result(Healthy, "generation %d observed by its controller, which reports no conditions", observed)
		}
	}
	if f.err != nil {
		return Result{}
	}
	if builtinGroup(o.u.GroupVersionKind().Group) && len(f.object("status")) == 0 {
		return Result{State: Healthy, Message: "exists"}
	}
	why := "no status"
	switch {
	case phase != "":
		why = "status.phase " + phase + " is not a phase the rules know"
	case len(f.object("status")) > 0:
		why = "no conditions, phase, health or observedGeneration in its status"
	}
	return Result{State: NoHealth, Message: "no health information (" + why + "): present"}
}

// kstatusKinds are the built-in kinds kstatus has a rule for that have
// none here (group/kind as schema.GroupKind.String writes them).
var kstatusKinds = map[string]bool{
	"ReplicaSet.apps":                               true,
	"ReplicaSet.extensions":                         true,
	"PodDisruptionBudget.policy":                    true,
	"CronJob.batch":                                 true,
	"CustomResourceDefinition.apiextensions.k8s.io": true,
}

// builtinGroup reports whether group is one of Kubernetes' own: the core
// group, a group without a dot (apps, batch, policy, autoscaling) or one
// under k8s.io.
func builtinGroup(group string) bool {
	return group == "" || !strings.Contains(group, ".") || strings.HasSuffix(group, ".k8s.io")
}

// fromHealthField reads status.health.status, the shape of Argo CD's
// Application (and of resources made in its image): one of the states
// with a message in status.health.message, except Missing, which is
// Progressing (the object itself exists). Another value is not read.
func fromHealthField(f *fields) (Result, bool) {
	h, ok := f.get("status", "health")
	if !ok {
		return Result{}, false
	}
	m, ok := h.(map[string]any)
	if !ok {
		return Result{}, false
	}
	st, _ := m["status"].(string)
	s := State(st)
	if !s.Valid() || s == NoHealth {
		return Result{}, false
	}
	msg, _ := m["message"].(string)
	msg = orDefault(strings.TrimSpace(msg), "status.health.status is "+st)
	if s == Missing {
		// The object is there: its own Missing (Argo CD's: the resources it
		// deploys are not there yet) is not driftguard's.
		return Result{State: Progressing, Message: "missing resources: " + msg}, true
	}
	return Result{State: s, Message: msg}, true
}

// phaseStates maps the values of status.phase whose meaning is common
// across custom resources (compared without regard to case). Running is
// Progressing: for a resource that runs to completion (a workflow, a
// pipeline run, a backup) it is not done, and a long-running resource that
// stays Running is better served by a custom rule than a Guard told it is
// Healthy before its work is done.
var phaseStates = map[string]State{
	"succeeded": Healthy, "completed": Healthy, "complete": Healthy, "ready": Healthy,
	"available": Healthy, "active": Healthy, "bound": Healthy, "healthy": Healthy,
	"established": Healthy, "deployed": Healthy, "synced": Healthy,

	"pending": Progressing, "running": Progressing, "progressing": Progressing,
	"creating": Progressing, "provisioning": Progressing, "initializing": Progressing,
	"installing": Progressing, "updating": Progressing, "upgrading": Progressing,
	"reconciling": Progressing, "deploying": Progressing, "starting": Progressing,
	"waiting": Progressing, "terminating": Progressing, "deleting": Progressing,
	"scaling": Progressing,

	"failed": Degraded, "failure": Degraded, "error": Degraded, "errored": Degraded,
	"degraded": Degraded, "crashed": Degraded, "unhealthy": Degraded, "lost": Degraded,

	"suspended": Suspended, "paused": Suspended,
}

// fromPhase reads status.phase (with status.message, or status.reason,
// as the message) when phaseStates knows it.
func fromPhase(phase string, f *fields) (Result, bool) {
	s, ok := phaseStates[strings.ToLower(phase)]
	if !ok {
		return Result{}, false
	}
	msg := "phase " + phase
	for _, key := range []string{"message", "reason"} {
		if v, ok := f.get("status", key); ok {
			if t, ok := v.(string); ok && strings.TrimSpace(t) != "" {
				msg += ": " + strings.TrimSpace(t)
				break
			}
		}
	}
	return Result{State: s, Message: msg}, true
}

// fromConditions reads the conditions custom resources commonly carry.
//
//   - Ready True: Healthy. False: Degraded, or Progressing when its reason
//     says the object is on its way (progressingReason) or a condition of
//     workingTypes is True. Unknown: Progressing.
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
			if w, ok := working(conds); ok {
				return Result{State: Progressing, Message: "not ready (" + w.Type + " is True): " + orDefault(c.text(), "no reason given")}, true
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

// workingTypes are the types of condition that, True, say the object's
// controller is at work on it: Reconciling (kstatus, Flux), Progressing,
// and Issuing (cert-manager's Certificate, whose Ready is False with a
// reason such as DoesNotExist until its first certificate is issued).
var workingTypes = []string{"Reconciling", "Progressing", "Issuing"}

// working returns the first True condition of workingTypes.
func working(conds []condition) (condition, bool) {
	for _, t := range workingTypes {
		if c, ok := findCondition(conds, t); ok && c.Status == "True" {
			return c, true
		}
	}
	return condition{}, false
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
	if msg == "Resource is current" {
		// What kstatus says when nothing it reads is wrong.
		msg = "no Reconciling or Stalled condition is True"
	}
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

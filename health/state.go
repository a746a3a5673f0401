package health

import (
	"fmt"
	"time"
)

// State is the health of one object.
type State string

// The states an assessment yields.
const (
	// Healthy: the object does what it was applied for.
	Healthy State = "Healthy"
	// Progressing: not there yet, but moving (a rollout, a pending claim, a
	// running Job, an object being deleted).
	Progressing State = "Progressing"
	// Degraded: failed, or stuck in a way that needs a person.
	Degraded State = "Degraded"
	// Suspended: paused on purpose (a paused Deployment, a suspended Job).
	Suspended State = "Suspended"
	// Missing: the object does not exist.
	Missing State = "Missing"
	// Unknown: the status could not be read.
	Unknown State = "Unknown"
	// NoHealth: the object is there but says nothing about its health (a
	// custom resource without conditions, phase or observedGeneration, such
	// as a ServiceMonitor). It counts as present: Worst ranks it below
	// Healthy, so it never makes a Guard anything but Healthy.
	NoHealth State = "NoHealth"
)

// States lists every State, from the best to the worst as Worst ranks them.
var States = []State{NoHealth, Healthy, Suspended, Progressing, Unknown, Missing, Degraded}

// Valid reports whether s is one of the states.
func (s State) Valid() bool {
	_, ok := severity[s]
	return ok
}

var severity = func() map[State]int {
	m := make(map[State]int, len(States))
	for i, s := range States {
		m[s] = i
	}
	return m
}()

// Worst returns the worst of states in the order of States (Degraded is the
// worst); Healthy when there are none, or only NoHealth: an object that has
// no health of its own does not make a sum of objects anything else. An
// invalid state counts as Unknown.
func Worst(states ...State) State {
	worst := Healthy
	for _, s := range states {
		if !s.Valid() {
			s = Unknown
		}
		if severity[s] > severity[worst] {
			worst = s
		}
	}
	return worst
}

// Result is the outcome of one assessment.
type Result struct {
	State State `json:"state"`
	// Message is a short sentence for a person, e.g. "2 of 3 replicas ready".
	Message string `json:"message,omitempty"`
	// Until, when set, is when the result stops holding although the
	// object may not change: a deadline (an APIService not available for
	// too long) or a window (a container that restarted recently). The
	// object must be assessed again after it.
	Until time.Time `json:"-"`
	// NoPods is set when the object's own status says it runs no pod (a
	// Deployment scaled to zero whose controller counts no replica): no
	// pod can crash-loop, so its pods need not be read.
	NoPods bool `json:"-"`
}

func (r Result) String() string {
	if r.Message == "" {
		return string(r.State)
	}
	return string(r.State) + ": " + r.Message
}

func result(s State, format string, args ...any) Result {
	return Result{State: s, Message: fmt.Sprintf(format, args...)}
}

package health

import "time"

// APIServiceStartDeadline is how long an APIService may be not Available
// (its Available condition False, measured from the condition's
// lastTransitionTime) and still be Progressing: the time its backend (a
// Deployment behind a Service, often pulling an image and waiting for a
// certificate) may take to start. Past it the APIService is Degraded.
const APIServiceStartDeadline = 5 * time.Minute

// apiService: Available True is Healthy. Available False is Progressing
// until APIServiceStartDeadline after the condition's lastTransitionTime,
// then Degraded; without a lastTransitionTime it is Degraded at once (there
// is nothing to measure from). No Available condition yet, or Unknown, is
// Progressing.
func apiService(f *fields, now time.Time) Result {
	c, ok := findCondition(f.conditions(), "Available")
	switch {
	case !ok:
		return Result{State: Progressing, Message: "waiting for the aggregator to check its service"}
	case c.Status == "True":
		return Result{State: Healthy, Message: orDefault(c.text(), "available")}
	case c.Status != "False":
		return Result{State: Progressing, Message: "availability unknown: " + orDefault(c.text(), "no reason given")}
	}
	why := orDefault(c.text(), "no reason given")
	if c.LastTransitionTime.IsZero() {
		return Result{State: Degraded, Message: "not available: " + why}
	}
	since := c.LastTransitionTime.UTC().Format(time.RFC3339)
	deadline := c.LastTransitionTime.Add(APIServiceStartDeadline)
	if now.Before(deadline) {
		return Result{
			State:   Progressing,
			Message: "not available since " + since + " (Degraded from " + deadline.UTC().Format(time.RFC3339) + "): " + why,
			Until:   deadline,
		}
	}
	return Result{State: Degraded, Message: "not available since " + since + " (more than " + APIServiceStartDeadline.String() + "): " + why}
}

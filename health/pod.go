package health

import (
	"fmt"
	"strings"
	"time"
)

// stuckReasons are the waiting reasons of a container that will not start
// without a change: a crash loop, an image that cannot be pulled, a
// container that cannot be created.
var stuckReasons = map[string]bool{
	"CrashLoopBackOff":           true,
	"ImagePullBackOff":           true,
	"ErrImagePull":               true,
	"InvalidImageName":           true,
	"CreateContainerConfigError": true,
	"CreateContainerError":       true,
	"RunContainerError":          true,
}

// RestartWindow is how long a container that was restarted after it
// exited must run before it no longer counts as crash-looping: the time
// after which the kubelet forgets a container's back-off (twice its
// maximum back-off of five minutes). Between two back-offs a crash-looping
// container runs for a moment, often Ready; without the window its pod
// would read Healthy then and Degraded again at the next crash.
const RestartWindow = 10 * time.Minute

// pod, by the pod's restartPolicy (default Always):
//
//   - Succeeded is Healthy, Failed is Degraded (the pod's reason, else the
//     container that exited non-zero).
//   - A container that exited and is being restarted is Degraded with its
//     exit code and restart count: waiting (CrashLoopBackOff) or terminated
//     after restarts, or running again for less than RestartWindow. With
//     restartPolicy Never a container that exited non-zero is Degraded: it
//     will not run again and the pod will fail.
//   - A container waiting with a reason in stuckReasons is Degraded.
//   - Running: with restartPolicy Always, Healthy when the Ready condition
//     is True, else Progressing; with Never or OnFailure the pod runs to
//     completion, so a running pod is Progressing until it has Succeeded.
//   - Pending is Progressing (with why it is not scheduled).
func pod(f *fields, now time.Time) Result {
	policy := orDefault(f.str("spec", "restartPolicy"), "Always")
	phase := f.str("status", "phase")
	switch phase {
	case "Succeeded":
		return Result{State: Healthy, Message: "completed"}
	case "Failed":
		return Result{State: Degraded, Message: "failed: " + podFailure(f)}
	}
	if r, ok := crashingContainer(f, policy, now); ok {
		return r
	}
	if msg, ok := stuckContainer(f); ok {
		return Result{State: Degraded, Message: msg}
	}
	conds := f.conditions()
	switch phase {
	case "Running":
		if policy != "Always" {
			return result(Progressing, "running (restartPolicy %s: done when it succeeds)", policy)
		}
		if c, ok := findCondition(conds, "Ready"); ok && c.Status == "True" {
			return Result{State: Healthy, Message: "running and ready"}
		}
		ready, total := 0, 0
		for i, cs := range f.objects("status", "containerStatuses") {
			total++
			if f.sub(cs, indexed([]string{"status", "containerStatuses"}, i)...).boolean("ready") {
				ready++
			}
		}
		return result(Progressing, "running, %d of %d containers ready", ready, total)
	case "Pending", "":
		if c, ok := findCondition(conds, "PodScheduled"); ok && c.Status == "False" {
			return Result{State: Progressing, Message: "not scheduled: " + orDefault(c.text(), "no reason given")}
		}
		return Result{State: Progressing, Message: "pending"}
	}
	return result(Unknown, "phase %s: %s", phase, orDefault(f.str("status", "message"), "the node is not reporting"))
}

// crashingContainer returns Degraded for the first container, init
// containers first, that exited and is restarted (or, with restartPolicy
// Never, exited non-zero), as pod describes. A container running again
// for less than RestartWindow gives a result that holds until the window
// ends.
func crashingContainer(f *fields, policy string, now time.Time) (Result, bool) {
	for _, list := range []string{"initContainerStatuses", "containerStatuses"} {
		for i, cs := range f.objects("status", list) {
			s := f.sub(cs, indexed([]string{"status", list}, i)...)
			name := s.str("name")
			restarts := s.intOr(0, "restartCount")
			switch {
			case s.has("state", "terminated"):
				code := s.intOr(0, "state", "terminated", "exitCode")
				exit := exitText(code, s.str("state", "terminated", "reason"))
				switch {
				case restarts > 0 && (policy == "Always" || (policy == "OnFailure" && code != 0)):
					return result(Degraded, "container %s %s%s", name, exit, restarted(restarts)), true
				case code == 0:
				case policy == "Never":
					if list == "containerStatuses" {
						return result(Degraded, "container %s %s (restartPolicy Never: it will not run again)", name, exit), true
					}
				default:
					return result(Degraded, "container %s %s", name, exit), true
				}
			case !s.has("lastState", "terminated") || policy == "Never":
			case s.has("state", "waiting"):
				code := s.intOr(0, "lastState", "terminated", "exitCode")
				if policy == "OnFailure" && code == 0 {
					continue
				}
				msg := fmt.Sprintf("container %s %s%s", name, exitText(code, s.str("lastState", "terminated", "reason")), restarted(restarts))
				if w := (condition{Reason: s.str("state", "waiting", "reason"), Message: s.str("state", "waiting", "message")}).text(); w != "" {
					msg += "; " + w
				}
				return Result{State: Degraded, Message: msg}, true
			case restarts > 0 && s.has("state", "running"):
				code := s.intOr(0, "lastState", "terminated", "exitCode")
				if policy == "OnFailure" && code == 0 {
					continue
				}
				msg := fmt.Sprintf("container %s %s%s", name, exitText(code, s.str("lastState", "terminated", "reason")), restarted(restarts))
				started, ok := s.time("state", "running", "startedAt")
				if !ok {
					return Result{State: Degraded, Message: msg}, true
				}
				until := started.Add(RestartWindow)
				if !now.Before(until) {
					continue
				}
				return Result{
					State: Degraded,
					Message: fmt.Sprintf("%s; running again since %s (counts as crash-looping until it has run %s)",
						msg, started.UTC().Format(time.RFC3339), RestartWindow),
					Until: until,
				}, true
			}
		}
	}
	return Result{}, false
}

// exitText is "exited with code 1 (Error)".
func exitText(code int64, reason string) string {
	if reason == "" {
		return fmt.Sprintf("exited with code %d", code)
	}
	return fmt.Sprintf("exited with code %d (%s)", code, reason)
}

// restarted is ", restarted 2 times"; "" for none.
func restarted(n int64) string {
	switch n {
	case 0:
		return ""
	case 1:
		return ", restarted once"
	}
	return fmt.Sprintf(", restarted %d times", n)
}

// stuckContainer returns a message for the first container, init
// containers first, that waits with a reason in stuckReasons.
func stuckContainer(f *fields) (string, bool) {
	for _, list := range []string{"initContainerStatuses", "containerStatuses"} {
		for i, cs := range f.objects("status", list) {
			s := f.sub(cs, indexed([]string{"status", list}, i)...)
			reason := s.str("state", "waiting", "reason")
			if !stuckReasons[reason] {
				continue
			}
			msg := fmt.Sprintf("container %s: %s", s.str("name"), reason)
			if m := s.str("state", "waiting", "message"); m != "" {
				msg += ": " + m
			}
			return msg, true
		}
	}
	return "", false
}

// podFailure says why a pod failed: the pod's reason and message, and the
// first container that exited non-zero (with its restarts).
func podFailure(f *fields) string {
	var parts []string
	reason, message := f.str("status", "reason"), f.str("status", "message")
	if reason != "" || message != "" {
		parts = append(parts, condition{Reason: reason, Message: message}.text())
	}
	for _, list := range []string{"initContainerStatuses", "containerStatuses"} {
		for i, cs := range f.objects("status", list) {
			s := f.sub(cs, indexed([]string{"status", list}, i)...)
			if !s.has("state", "terminated") {
				continue
			}
			code := s.intOr(0, "state", "terminated", "exitCode")
			if code == 0 {
				continue
			}
			var b strings.Builder
			fmt.Fprintf(&b, "container %s %s", s.str("name"), exitText(code, s.str("state", "terminated", "reason")))
			b.WriteString(restarted(s.intOr(0, "restartCount")))
			// The container's message often repeats the pod's.
			if m := s.str("state", "terminated", "message"); m != "" && m != message {
				fmt.Fprintf(&b, ": %s", m)
			}
			parts = append(parts, b.String())
			return strings.Join(parts, "; ")
		}
	}
	if len(parts) == 0 {
		return "no reason given"
	}
	return parts[0]
}

package health

import (
	"fmt"
	"strings"
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

// pod: Succeeded, or Running with the Ready condition True, is Healthy;
// Failed, or a container waiting with a reason in stuckReasons, is Degraded;
// Pending, or Running but not ready, is Progressing.
func pod(f *fields) Result {
	phase := f.str("status", "phase")
	switch phase {
	case "Succeeded":
		return Result{State: Healthy, Message: "completed"}
	case "Failed":
		return Result{State: Degraded, Message: "failed: " + podFailure(f)}
	}
	if msg, ok := stuckContainer(f); ok {
		return Result{State: Degraded, Message: msg}
	}
	conds := f.conditions()
	switch phase {
	case "Running":
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

// podFailure says why a pod failed: the pod's reason and message, else the
// first container that exited non-zero.
func podFailure(f *fields) string {
	reason, message := f.str("status", "reason"), f.str("status", "message")
	if reason != "" || message != "" {
		return condition{Reason: reason, Message: message}.text()
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
			fmt.Fprintf(&b, "container %s exited with code %d", s.str("name"), code)
			if r := s.str("state", "terminated", "reason"); r != "" {
				fmt.Fprintf(&b, " (%s)", r)
			}
			return b.String()
		}
	}
	return "no reason given"
}

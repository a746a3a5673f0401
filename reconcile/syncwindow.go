package reconcile

import (
	"fmt"
	"strings"
	"time"

	"github.com/robfig/cron/v3"

	"github.com/driftguard/driftguard/api/v1alpha1"
)

// windowParser reads the five-field cron schedules of sync windows, and
// the descriptors (@daily, @every 1h).
var windowParser = cron.NewParser(cron.Minute | cron.Hour | cron.Dom | cron.Month | cron.Dow | cron.Descriptor)

// Gate says whether a new revision may be applied now.
type Gate struct {
	// Open is true when no window blocks.
	Open bool
	// ManualOK is true when a manual sync may pass although a window blocks
	// (every blocking window has manualSync).
	ManualOK bool
	// Message says which window blocks and until when, for status.
	Message string
	// Next is when the gate should be looked at again (zero: no need).
	Next time.Time
}

// compiledWindow is a sync window with its schedule parsed.
type compiledWindow struct {
	v1alpha1.SyncWindow
	index    int
	schedule cron.Schedule
	loc      *time.Location
}

// compileWindows parses the schedules and time zones; errors name the field.
func compileWindows(ws []v1alpha1.SyncWindow) ([]compiledWindow, error) {
	out := make([]compiledWindow, 0, len(ws))
	for i, w := range ws {
		field := fmt.Sprintf("spec.syncWindows[%d]", i)
		loc := time.UTC
		if w.TimeZone != "" {
			l, err := time.LoadLocation(w.TimeZone)
			if err != nil {
				return nil, fmt.Errorf("%s.timeZone %q: %w", field, w.TimeZone, err)
			}
			loc = l
		}
		sched, err := windowParser.Parse(w.Schedule)
		if err != nil {
			return nil, fmt.Errorf("%s.schedule %q: %w", field, w.Schedule, err)
		}
		if w.Duration.Duration <= 0 {
			return nil, fmt.Errorf("%s.duration must be positive", field)
		}
		if w.Kind != "allow" && w.Kind != "deny" {
			return nil, fmt.Errorf("%s.kind %q: want allow or deny", field, w.Kind)
		}
		out = append(out, compiledWindow{SyncWindow: w, index: i, schedule: sched, loc: loc})
	}
	return out, nil
}

// openUntil reports whether the window is open at now, and until when.
// A window is open when it was opened by its schedule less than its
// duration ago; overlapping openings extend it.
func (w compiledWindow) openUntil(now time.Time) (bool, time.Time) {
	local := now.In(w.loc)
	var until time.Time
	for t := w.schedule.Next(local.Add(-w.Duration.Duration)); !t.After(local); t = w.schedule.Next(t) {
		until = t.Add(w.Duration.Duration)
	}
	return !until.IsZero() && until.After(local), until
}

func (w compiledWindow) describe() string {
	tz := w.TimeZone
	if tz == "" {
		tz = "UTC"
	}
	return fmt.Sprintf("%s window %q (%s, %s)", w.Kind, w.Schedule, w.Duration.Duration, tz)
}

// EvaluateWindows decides the gate at now: closed while a deny window is
// open, or while allow windows exist and none is open.
func EvaluateWindows(ws []v1alpha1.SyncWindow, now time.Time) (Gate, error) {
	if len(ws) == 0 {
		return Gate{Open: true, ManualOK: true}, nil
	}
	windows, err := compileWindows(ws)
	if err != nil {
		return Gate{}, err
	}
	var (
		denying  []string
		manualOK = true
		next     time.Time
		allows   bool
		allowOK  bool
		allowMan = true
	)
	earliest := func(t time.Time) {
		if !t.IsZero() && (next.IsZero() || t.Before(next)) {
			next = t
		}
	}
	for _, w := range windows {
		open, until := w.openUntil(now)
		switch {
		case w.Kind == "deny" && open:
			denying = append(denying, fmt.Sprintf("%s is open until %s", w.describe(), until.UTC().Format(time.RFC3339)))
			manualOK = manualOK && w.ManualSync
			earliest(until)
		case w.Kind == "deny":
			earliest(w.schedule.Next(now.In(w.loc)))
		case open:
			allows, allowOK = true, true
			earliest(until)
		default:
			allows = true
			allowMan = allowMan && w.ManualSync
			earliest(w.schedule.Next(now.In(w.loc)))
		}
	}
	if len(denying) > 0 {
		return Gate{Open: false, ManualOK: manualOK, Message: "sync blocked: " + strings.Join(denying, "; "), Next: next}, nil
	}
	if allows && !allowOK {
		msg := "sync blocked: outside every allow window"
		if !next.IsZero() {
			msg += fmt.Sprintf("; the next window opens at %s", next.UTC().Format(time.RFC3339))
		}
		return Gate{Open: false, ManualOK: allowMan, Message: msg, Next: next}, nil
	}
	return Gate{Open: true, ManualOK: true, Next: next}, nil
}

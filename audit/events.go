package audit

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

const (
	// defaultEventTimeout bounds one Write of the event sink, whatever the
	// size of the batch, so a slow API server cannot hold up the other sinks
	// for long.
	defaultEventTimeout = 2 * time.Second
	// maxEventMessage is the longest message the API server takes from
	// events.k8s.io; core/v1 takes more, but a longer one is not legible.
	maxEventMessage = 1024
	// rememberedEvents is how many created event names the sink keeps, so a
	// retried batch does not create its events twice.
	rememberedEvents = 4096
	// guardGroup, guardVersion and guardKind name the Guard resource, the
	// involved object of a record that names no object of its own.
	guardGroup   = "driftguard.io"
	guardVersion = "v1alpha1"
	guardKind    = "Guard"
)

// eventSink creates a core/v1 Event on the object of each record.
type eventSink struct {
	client    kubernetes.Interface
	component string
	instance  string
	timeout   time.Duration
	now       func() time.Time

	mu      sync.Mutex
	created map[string]struct{}
	order   []string
}

// NewEventSink returns a Sink that creates a core/v1 Event on the object of
// each record, reported by component (the Event's source and reporting
// controller). The Event's reason is the record's type and action in
// CamelCase (DriftDetected, DriftReverted, Denied, ...), its type Warning for
// drift, denials and errors and Normal otherwise, and its message names the
// user and the fields. A record that names no object is put on its Guard, and
// one with neither is not sent as an Event.
//
// One Write takes at most two seconds, however many records it carries; what
// is not created by then is reported as failed. Event names are derived from
// the record, so a retried record is not created twice.
func NewEventSink(c kubernetes.Interface, component string) Sink {
	if component == "" {
		component = "driftguard"
	}
	host, _ := os.Hostname()
	return &eventSink{
		client:    c,
		component: component,
		instance:  truncate(host, 128),
		timeout:   defaultEventTimeout,
		now:       time.Now,
		created:   make(map[string]struct{}),
	}
}

func (s *eventSink) Name() string { return "events" }

func (s *eventSink) Close() error { return nil }

func (s *eventSink) Write(ctx context.Context, batch []Record) error {
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()

	var (
		failed    int
		permanent = true
		firstErr  error
	)
	for i, r := range batch {
		ev, err := s.event(r)
		if err != nil {
			failed++
			firstErr = cmpErr(firstErr, err)
			continue
		}
		if ev == nil || s.wasCreated(ev.Name) {
			continue
		}
		if ctx.Err() != nil {
			// Out of time: do not wait on the API server for the rest.
			failed += len(batch) - i
			permanent = false
			firstErr = cmpErr(firstErr, fmt.Errorf("%d events not created: %w", len(batch)-i, context.Cause(ctx)))
			break
		}
		_, err = s.client.CoreV1().Events(ev.Namespace).Create(ctx, ev, metav1.CreateOptions{})
		switch {
		case err == nil, apierrors.IsAlreadyExists(err):
			s.remember(ev.Name)
		default:
			failed++
			if !apierrors.IsInvalid(err) && !apierrors.IsForbidden(err) && !apierrors.IsNotFound(err) {
				permanent = false
			}
			firstErr = cmpErr(firstErr, fmt.Errorf("create event %s/%s for %s: %w", ev.Namespace, ev.Name, r.Object, err))
		}
	}
	if failed == 0 {
		return nil
	}
	return &partialError{failed: failed, permanent: permanent,
		err: fmt.Errorf("sink events: %d of %d records not sent: %w", failed, len(batch), firstErr)}
}

func cmpErr(first, err error) error {
	if first != nil {
		return first
	}
	return err
}

func (s *eventSink) wasCreated(name string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, ok := s.created[name]
	return ok
}

func (s *eventSink) remember(name string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.created[name]; ok {
		return
	}
	if len(s.order) >= rememberedEvents {
		delete(s.created, s.order[0])
		s.order = s.order[1:]
	}
	s.created[name] = struct{}{}
	s.order = append(s.order, name)
}

// event builds the Event for r, or returns nil when r names no object or
// is a routine apply or prune: a revision of thousands of objects would
// otherwise make as many Events, and the reconciler already sums each
// apply up in one Event on the Guard (RevisionApplied, Pruned). Failures,
// drift, reverts and decisions get an Event on the object.
func (s *eventSink) event(r Record) (*corev1.Event, error) {
	if (r.Type == Apply || r.Type == Prune) && r.Error == "" {
		return nil, nil
	}
	obj := r.Object
	if obj.Name == "" {
		if r.Guard == "" {
			return nil, nil
		}
		obj = Object{Group: guardGroup, Version: guardVersion, Kind: guardKind, Name: r.Guard}
	}
	line, err := json.Marshal(r)
	if err != nil {
		return nil, fmt.Errorf("encode %s record for %s: %w", r.Type, r.Object, err)
	}
	sum := sha256.Sum256(line)
	ns := obj.Namespace
	if ns == "" {
		ns = metav1.NamespaceDefault
	}
	t := r.Time
	if t.IsZero() {
		t = s.now()
	}
	reason := eventReason(r)
	return &corev1.Event{
		ObjectMeta: metav1.ObjectMeta{
			Name:      eventName(obj.Name, hex.EncodeToString(sum[:8])),
			Namespace: ns,
		},
		InvolvedObject: corev1.ObjectReference{
			APIVersion: obj.APIVersion(),
			Kind:       obj.Kind,
			Namespace:  obj.Namespace,
			Name:       obj.Name,
		},
		Reason:              reason,
		Message:             eventMessage(r),
		Type:                eventType(r),
		Source:              corev1.EventSource{Component: s.component},
		FirstTimestamp:      metav1.NewTime(t),
		LastTimestamp:       metav1.NewTime(t),
		Count:               1,
		ReportingController: s.component,
		ReportingInstance:   s.instance,
		Action:              truncate(reason, 128),
	}, nil
}

// eventName returns a valid Event name made of the object's name and a digest
// of the record.
func eventName(objName, digest string) string {
	var b strings.Builder
	for _, c := range strings.ToLower(objName) {
		switch {
		case c >= 'a' && c <= 'z', c >= '0' && c <= '9', c == '-', c == '.':
			b.WriteRune(c)
		default:
			b.WriteByte('-')
		}
	}
	base := strings.Trim(b.String(), "-.")
	if limit := 253 - 1 - len(digest); len(base) > limit {
		base = strings.Trim(base[:limit], "-.")
	}
	if base == "" {
		base = "driftguard"
	}
	return base + "." + digest
}

// eventReason returns the reason of the Event for r: its type, and for a
// decision its action, in CamelCase.
func eventReason(r Record) string {
	switch r.Type {
	case Decision:
		switch strings.ToLower(r.Action) {
		case "deny":
			return "Denied"
		case "allow":
			return "Allowed"
		case "warn":
			return "Warned"
		case "revert":
			return "AllowedForRevert"
		}
		return "Decided"
	case Drift:
		return "DriftDetected"
	case Revert:
		if r.Error != "" {
			return "DriftRevertFailed"
		}
		return "DriftReverted"
	case Apply:
		return "ApplyFailed" // a successful one has no Event
	case Prune:
		return "PruneFailed"
	case Recreate:
		if r.Error != "" {
			return "RecreateFailed"
		}
		return "Recreated"
	case Error:
		return "Failed"
	}
	return camel(string(r.Type))
}

// eventType is Warning for drift, denials and failures, Normal otherwise.
func eventType(r Record) string {
	if r.Type == Drift || r.Type == Error || r.Error != "" ||
		(r.Type == Decision && strings.EqualFold(r.Action, "deny")) {
		return corev1.EventTypeWarning
	}
	return corev1.EventTypeNormal
}

// eventMessage returns the message of the Event for r: what happened, who did
// it, which fields, and why, at most 1024 bytes.
func eventMessage(r Record) string {
	var b strings.Builder
	b.WriteString(summary(r))
	if r.Operation != "" {
		fmt.Fprintf(&b, " (%s)", r.Operation)
	}
	if who := actor(r); who != "" {
		b.WriteString(" by ")
		b.WriteString(who)
	}
	if len(r.Fields) > 0 {
		b.WriteString(": ")
		for i, f := range r.Fields {
			if i > 0 {
				b.WriteString(", ")
			}
			fmt.Fprintf(&b, "%s %s -> %s", f.Path, shortValue(f.Desired), shortValue(f.Live))
		}
	}
	if r.Reason != "" {
		b.WriteString("; reason: ")
		b.WriteString(r.Reason)
	}
	if r.Rule != "" {
		b.WriteString("; rule: ")
		b.WriteString(r.Rule)
	}
	if r.Error != "" {
		b.WriteString("; error: ")
		b.WriteString(r.Error)
	}
	if r.Source != nil && r.Source.Path != "" {
		fmt.Fprintf(&b, "; git: %s", r.Source.Path)
		if r.Source.Line > 0 {
			fmt.Fprintf(&b, ":%d", r.Source.Line)
		}
		if r.Source.Revision != "" {
			fmt.Fprintf(&b, "@%s", r.Source.Revision)
		}
	}
	if r.DryRun {
		b.WriteString("; dry run")
	}
	return truncate(b.String(), maxEventMessage)
}

func summary(r Record) string {
	switch r.Type {
	case Decision:
		switch strings.ToLower(r.Action) {
		case "deny":
			return "Change denied"
		case "allow":
			return "Change allowed"
		case "warn":
			return "Change allowed with a warning"
		case "revert":
			return "Change allowed, to be reverted"
		}
		return "Change decided: " + r.Action
	case Drift:
		return "Drift from Git detected"
	case Revert:
		if r.Error != "" {
			return "Reverting drift failed"
		}
		return "Drift reverted to Git"
	case Apply:
		if r.Action != "" {
			return "Applied from Git: " + r.Action
		}
		return "Applied from Git"
	case Prune:
		return "Pruned, no longer in Git"
	case Recreate:
		return "Recreated from Git"
	case Error:
		return "Error"
	}
	return camel(string(r.Type))
}

// actor names who made the change: the user, and the field manager when it
// says more.
func actor(r Record) string {
	who := r.User
	switch {
	case who == "":
		who = r.Manager
	case r.Manager != "" && r.Manager != r.User:
		who += " via " + r.Manager
	}
	if who != "" && len(r.Groups) > 0 {
		who += " (groups " + strings.Join(r.Groups, ",") + ")"
	}
	return who
}

func shortValue(v any) string {
	if v == nil {
		return "(absent)"
	}
	b, err := json.Marshal(v)
	if err != nil {
		return "(unprintable)"
	}
	return truncate(string(b), 40)
}

// truncate cuts s to at most n bytes on a rune boundary, marking the cut.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	const mark = "..."
	cut := n - len(mark)
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + mark
}

// camel turns "some-type_name" into "SomeTypeName".
func camel(s string) string {
	var b strings.Builder
	up := true
	for _, c := range s {
		if c == '-' || c == '_' || c == ' ' {
			up = true
			continue
		}
		if up {
			b.WriteString(strings.ToUpper(string(c)))
			up = false
		} else {
			b.WriteRune(c)
		}
	}
	if b.Len() == 0 {
		return "Unknown"
	}
	return b.String()
}

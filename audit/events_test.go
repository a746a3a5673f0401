package audit

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
)

func listEvents(t *testing.T, c *fake.Clientset) []corev1.Event {
	t.Helper()
	list, err := c.CoreV1().Events(metav1.NamespaceAll).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return list.Items
}

func TestEventSink(t *testing.T) {
	when := time.Date(2026, 5, 6, 7, 8, 9, 0, time.UTC)
	web := Object{Group: "apps", Version: "v1", Kind: "Deployment", Namespace: "shop", Name: "web"}
	tests := []struct {
		name        string
		rec         Record
		wantNone    bool
		wantNS      string
		wantRef     corev1.ObjectReference
		wantReason  string
		wantType    string
		wantMessage []string
	}{
		{
			name: "denied scale",
			rec: Record{Time: when, Type: Decision, User: "alice", Groups: []string{"dev"}, Operation: "UPDATE", Object: web,
				Fields: []Field{{Path: "/spec/replicas", Desired: 3, Live: 5}}, Action: "deny", Reason: "managed by Git"},
			wantNS:      "shop",
			wantRef:     corev1.ObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Namespace: "shop", Name: "web"},
			wantReason:  "Denied",
			wantType:    corev1.EventTypeWarning,
			wantMessage: []string{"Change denied (UPDATE) by alice (groups dev)", "/spec/replicas 3 -> 5", "reason: managed by Git"},
		},
		{
			name: "drift by a field manager",
			rec: Record{Time: when, Type: Drift, Manager: "kubectl-edit", Object: web,
				Fields: []Field{{Path: "/metadata/labels/app", Desired: "web"}}},
			wantNS: "shop", wantRef: corev1.ObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Namespace: "shop", Name: "web"},
			wantReason: "DriftDetected", wantType: corev1.EventTypeWarning,
			wantMessage: []string{"by kubectl-edit", `/metadata/labels/app "web" -> (absent)`},
		},
		{
			name:   "revert names user and manager",
			rec:    Record{Time: when, Type: Revert, User: "bob", Manager: "kubectl", Object: web, Fields: []Field{{Path: "/spec/replicas", Desired: 3, Live: 5}}},
			wantNS: "shop", wantRef: corev1.ObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Namespace: "shop", Name: "web"},
			wantReason: "DriftReverted", wantType: corev1.EventTypeNormal,
			wantMessage: []string{"Drift reverted to Git by bob via kubectl"},
		},
		{
			name:   "failed apply of a cluster-scoped core object",
			rec:    Record{Time: when, Type: Apply, Object: Object{Version: "v1", Kind: "Namespace", Name: "shop"}, Error: "conflict"},
			wantNS: "default", wantRef: corev1.ObjectReference{APIVersion: "v1", Kind: "Namespace", Name: "shop"},
			wantReason: "ApplyFailed", wantType: corev1.EventTypeWarning,
			wantMessage: []string{"error: conflict"},
		},
		{
			name:     "a successful apply has no event of its own (the Guard's RevisionApplied sums it up)",
			rec:      Record{Time: when, Type: Apply, Action: "configured", Object: web},
			wantNone: true,
		},
		{
			name:     "a successful prune has no event of its own (the Guard's Pruned sums it up)",
			rec:      Record{Time: when, Type: Prune, Action: "deleted", Object: web},
			wantNone: true,
		},
		{
			name:   "guard-level error goes on the Guard",
			rec:    Record{Time: when, Type: Error, Guard: "infra", Error: "fetch: connection refused"},
			wantNS: "default", wantRef: corev1.ObjectReference{APIVersion: "driftguard.io/v1alpha1", Kind: "Guard", Name: "infra"},
			wantReason: "Failed", wantType: corev1.EventTypeWarning,
			wantMessage: []string{"fetch: connection refused"},
		},
		{
			name:     "no object and no guard: no event",
			rec:      Record{Time: when, Type: Error, Error: "boom"},
			wantNone: true,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := fake.NewClientset()
			s := NewEventSink(c, "driftguard")
			if err := s.Write(context.Background(), []Record{tc.rec}); err != nil {
				t.Fatalf("Write: %v", err)
			}
			// A retried batch must not create the event twice.
			s.(*eventSink).created = map[string]struct{}{}
			if err := s.Write(context.Background(), []Record{tc.rec}); err != nil {
				t.Fatalf("second Write: %v", err)
			}
			evs := listEvents(t, c)
			if tc.wantNone {
				if len(evs) != 0 {
					t.Fatalf("got %d events, want none", len(evs))
				}
				return
			}
			if len(evs) != 1 {
				t.Fatalf("got %d events, want 1", len(evs))
			}
			ev := evs[0]
			if ev.Namespace != tc.wantNS || ev.InvolvedObject != tc.wantRef {
				t.Errorf("event in %q on %+v, want %q on %+v", ev.Namespace, ev.InvolvedObject, tc.wantNS, tc.wantRef)
			}
			if ev.Reason != tc.wantReason || ev.Type != tc.wantType {
				t.Errorf("reason %q type %q, want %q %q", ev.Reason, ev.Type, tc.wantReason, tc.wantType)
			}
			for _, want := range tc.wantMessage {
				if !strings.Contains(ev.Message, want) {
					t.Errorf("message %q lacks %q", ev.Message, want)
				}
			}
			if ev.Source.Component != "driftguard" || ev.ReportingController != "driftguard" || ev.Count != 1 || !ev.FirstTimestamp.Time.Equal(when) {
				t.Errorf("source/reporting/count/time: %+v", ev)
			}
		})
	}
}

func TestEventSinkFailures(t *testing.T) {
	batch := []Record{rec(1), rec(2), rec(3)}
	tests := []struct {
		name          string
		react         k8stesting.ReactionFunc
		timeout       time.Duration
		wantFailed    int
		wantPermanent bool
		maxElapsed    time.Duration
	}{
		{
			name: "forbidden: not retried",
			react: func(k8stesting.Action) (bool, runtime.Object, error) {
				return true, nil, apierrors.NewForbidden(schema.GroupResource{Resource: "events"}, "x", errors.New("no RBAC"))
			},
			wantFailed: 3, wantPermanent: true, maxElapsed: time.Second,
		},
		{
			name: "server error: retried",
			react: func(k8stesting.Action) (bool, runtime.Object, error) {
				return true, nil, apierrors.NewInternalError(errors.New("etcd"))
			},
			wantFailed: 3, maxElapsed: time.Second,
		},
		{
			name: "slow API: the write gives up at its timeout",
			react: func(k8stesting.Action) (bool, runtime.Object, error) {
				time.Sleep(150 * time.Millisecond)
				return false, nil, nil // then the tracker creates it
			},
			timeout:    50 * time.Millisecond,
			wantFailed: 2, maxElapsed: 600 * time.Millisecond,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := fake.NewClientset()
			c.PrependReactor("create", "events", tc.react)
			s := NewEventSink(c, "driftguard").(*eventSink)
			if tc.timeout > 0 {
				s.timeout = tc.timeout
			}
			start := time.Now()
			err := s.Write(context.Background(), batch)
			if elapsed := time.Since(start); elapsed > tc.maxElapsed {
				t.Errorf("Write took %v, want at most %v", elapsed, tc.maxElapsed)
			}
			if err == nil {
				t.Fatal("Write succeeded")
			}
			if n := failedCount(err, len(batch)); n != tc.wantFailed {
				t.Errorf("failed %d, want %d (%v)", n, tc.wantFailed, err)
			}
			if isPermanent(err) != tc.wantPermanent {
				t.Errorf("permanent %v, want %v", isPermanent(err), tc.wantPermanent)
			}
		})
	}
}

func TestSlowEventSinkDoesNotHoldUpOthers(t *testing.T) {
	c := fake.NewClientset()
	var calls atomic.Int32
	c.PrependReactor("create", "events", func(k8stesting.Action) (bool, runtime.Object, error) {
		calls.Add(1)
		time.Sleep(100 * time.Millisecond)
		return true, nil, apierrors.NewTimeoutError("slow", 1)
	})
	events := NewEventSink(c, "driftguard").(*eventSink)
	events.timeout = 20 * time.Millisecond
	mem := &memSink{name: "mem"}
	l := newTestLogger(logr.Discard(), 1000, events, mem)
	startLogger(t, l)
	start := time.Now()
	for i := range 200 {
		l.Log(context.Background(), rec(i))
	}
	_ = flush(t, l)
	if got := len(mem.got()); got != 200 {
		t.Errorf("other sink got %d records, want 200", got)
	}
	// Each batch costs at most about (1+retries) x (timeout + one slow call).
	if elapsed := time.Since(start); elapsed > 5*time.Second {
		t.Errorf("took %v", elapsed)
	}
	if l.Stats().Failed["events"] == 0 || l.SinkErrors()["events"] == nil {
		t.Errorf("event failures not counted: %+v", l.Stats())
	}
}

func TestEventName(t *testing.T) {
	tests := []struct{ obj, want string }{
		{"web", "web.abc"},
		{"system:controller:Foo", "system-controller-foo.abc"},
		{"::", "driftguard.abc"},
		{strings.Repeat("a", 300), strings.Repeat("a", 253-4) + ".abc"},
	}
	for _, tc := range tests {
		if got := eventName(tc.obj, "abc"); got != tc.want {
			t.Errorf("eventName(%q) = %q, want %q", tc.obj, got, tc.want)
		}
	}
}

func TestEventMessageTruncated(t *testing.T) {
	r := Record{Type: Drift, User: "alice", Object: Object{Version: "v1", Kind: "ConfigMap", Name: "c"}}
	for range 200 {
		r.Fields = append(r.Fields, Field{Path: "/data/some-long-key-name", Desired: strings.Repeat("é", 30), Live: "x"})
	}
	msg := eventMessage(r)
	if len(msg) > maxEventMessage || !strings.HasSuffix(msg, "...") {
		t.Errorf("message of %d bytes, suffix %q", len(msg), msg[len(msg)-5:])
	}
	if !strings.HasPrefix(msg, "Drift from Git detected by alice: /data/some-long-key-name ") {
		t.Errorf("message %q", msg[:80])
	}
}

package reconcile

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/driftguard/driftguard/api/v1alpha1"
	"github.com/driftguard/driftguard/render"
	"github.com/driftguard/driftguard/source"
)

func TestRenderBackoff(t *testing.T) {
	for _, tt := range []struct {
		interval time.Duration
		failures int32
		want     time.Duration
	}{
		{time.Minute, 1, time.Minute},
		{time.Minute, 2, 2 * time.Minute},
		{time.Minute, 4, 8 * time.Minute},
		{time.Minute, 7, time.Hour},
		{time.Minute, 1000, time.Hour},
		{10 * time.Minute, 0, 10 * time.Minute},
		{2 * time.Hour, 1, time.Hour},
		{0, 1, time.Second},
	} {
		if got := renderBackoff(tt.interval, tt.failures); got != tt.want {
			t.Errorf("renderBackoff(%s, %d) = %s, want %s", tt.interval, tt.failures, got, tt.want)
		}
	}
}

// TestFailedRevision: what a guard that did not see a revision fail (a new
// leader) makes of the record in the status.
func TestFailedRevision(t *testing.T) {
	now := time.Date(2026, 12, 3, 12, 0, 0, 0, time.UTC)
	guard := func(mod func(*v1alpha1.Guard)) *v1alpha1.Guard {
		g := &v1alpha1.Guard{ObjectMeta: metav1.ObjectMeta{Name: "shop", Generation: 3}}
		g.Status.RenderFailure = &v1alpha1.RenderFailure{Revision: "bad", ObservedGeneration: 3, Message: "apps/x.yaml:1: broken", Failures: 2, LastFailure: metav1.NewTime(now.Add(-time.Minute))}
		if mod != nil {
			mod(g)
		}
		return g
	}
	for _, tt := range []struct {
		name  string
		g     *v1alpha1.Guard
		until time.Time // zero: no record for the fetch
	}{
		{"within the backoff", guard(nil), now.Add(time.Minute)}, // 2 failures: 2 × 1m after the last
		{"no record", guard(func(g *v1alpha1.Guard) { g.Status.RenderFailure = nil }), time.Time{}},
		{"the spec changed", guard(func(g *v1alpha1.Guard) { g.Generation = 4 }), time.Time{}},
		{"the backoff passed", guard(func(g *v1alpha1.Guard) {
			g.Status.RenderFailure.LastFailure = metav1.NewTime(now.Add(-2 * time.Minute))
		}), time.Time{}},
		{"a sync requested", guard(func(g *v1alpha1.Guard) { g.Annotations = map[string]string{v1alpha1.SyncRequestedAnnotation: "2"} }), time.Time{}},
		{"a sync request already handled", guard(func(g *v1alpha1.Guard) {
			g.Annotations = map[string]string{v1alpha1.SyncRequestedAnnotation: "2"}
			g.Status.LastHandledSyncRequest = "2"
		}), now.Add(time.Minute)},
		{"a reconcile with source requested", guard(func(g *v1alpha1.Guard) {
			g.Annotations = map[string]string{v1alpha1.ReconcileRequestedAnnotation: "r2", v1alpha1.ReconcileSourceAnnotation: "r2"}
		}), time.Time{}},
		{"a reconcile without source requested", guard(func(g *v1alpha1.Guard) {
			g.Annotations = map[string]string{v1alpha1.ReconcileRequestedAnnotation: "r2", v1alpha1.ReconcileSourceAnnotation: "r1"}
		}), now.Add(time.Minute)},
		{"a reconcile with source already handled", guard(func(g *v1alpha1.Guard) {
			g.Annotations = map[string]string{v1alpha1.ReconcileRequestedAnnotation: "r2", v1alpha1.ReconcileSourceAnnotation: "r2"}
			g.Status.LastHandledReconcileAt = "r2"
		}), now.Add(time.Minute)},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got := failedRevision(tt.g, time.Minute, now)
			if tt.until.IsZero() {
				if got != nil {
					t.Fatalf("failedRevision = %+v, want none", got)
				}
				return
			}
			if got == nil || got.Revision != "bad" || got.Message != "apps/x.yaml:1: broken" || !got.Until.Equal(tt.until) {
				t.Fatalf("failedRevision = %+v, want revision bad until %s", got, tt.until)
			}
			err := got.ErrFor("bad")
			var re *render.RenderError
			if !errors.As(err, &re) || !errors.Is(err, source.ErrRecordedFailure) || !strings.HasPrefix(err.Error(), "apps/x.yaml:1: broken (failed before;") {
				t.Fatalf("ErrFor = %v", err)
			}
			if got.ErrFor("good") != nil {
				t.Fatal("another revision has the recorded error")
			}
		})
	}
}

func TestRecordRenderFailure(t *testing.T) {
	now := time.Date(2026, 12, 3, 12, 0, 0, 0, time.UTC)
	rendered := fmt.Errorf("render apps at bad: %w", &render.RenderError{Path: "apps/x.yaml", Line: 1, Err: errors.New("broken")})
	at := func(d time.Duration) metav1.Time { return metav1.NewTime(now.Add(d)) }
	for _, tt := range []struct {
		name     string
		prev     *v1alpha1.RenderFailure
		rev      string
		err      error
		failures int32
		last     metav1.Time
	}{
		{"first failure", nil, "bad", rendered, 1, at(0)},
		{"another revision", &v1alpha1.RenderFailure{Revision: "older", ObservedGeneration: 3, Failures: 5, LastFailure: at(-time.Second)}, "bad", rendered, 1, at(0)},
		{"another spec", &v1alpha1.RenderFailure{Revision: "bad", ObservedGeneration: 2, Failures: 5, LastFailure: at(-time.Second)}, "bad", rendered, 1, at(0)},
		{"seen again within the backoff", &v1alpha1.RenderFailure{Revision: "bad", ObservedGeneration: 3, Failures: 1, LastFailure: at(-30 * time.Second)}, "bad", rendered, 1, at(-30 * time.Second)},
		{"seen again after the backoff", &v1alpha1.RenderFailure{Revision: "bad", ObservedGeneration: 3, Failures: 1, LastFailure: at(-time.Minute)}, "bad", rendered, 2, at(0)},
		{"the record itself", &v1alpha1.RenderFailure{Revision: "bad", ObservedGeneration: 3, Failures: 3, LastFailure: at(-time.Hour)}, "bad",
			(&source.FailedRevision{Revision: "bad", Message: "m"}).ErrFor("bad"), 3, at(-time.Hour)},
	} {
		t.Run(tt.name, func(t *testing.T) {
			g := &v1alpha1.Guard{ObjectMeta: metav1.ObjectMeta{Name: "shop", Generation: 3}}
			g.Status.RenderFailure = tt.prev
			recordRenderFailure(g, tt.rev, tt.err, time.Minute, now)
			f := g.Status.RenderFailure
			if f == nil || f.Revision != tt.rev || f.Failures != tt.failures || !f.LastFailure.Equal(&tt.last) {
				t.Fatalf("record = %+v, want %s with %d failures, last at %s", f, tt.rev, tt.failures, tt.last)
			}
			if tt.prev == nil && (f.ObservedGeneration != 3 || f.Message != rendered.Error()) {
				t.Fatalf("record = %+v", f)
			}
		})
	}
	g := &v1alpha1.Guard{}
	recordRenderFailure(g, "bad", errors.New(strings.Repeat("é", 5000)), time.Minute, now)
	if m := g.Status.RenderFailure.Message; len(m) > maxRenderFailureMessage+len("…") || !strings.HasSuffix(m, "…") || !strings.Contains(m, "é") {
		t.Fatalf("a long message is kept as %d bytes", len(m))
	}
}

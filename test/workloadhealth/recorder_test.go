package workloadhealth

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/fields"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/driftguard/driftguard/api/v1alpha1"
	"github.com/driftguard/driftguard/app"
	"github.com/driftguard/driftguard/test/wait"
)

// step is the state of a Guard's status at one moment, as a watch saw it.
type step struct {
	At        time.Time
	Health    string
	Unhealthy []string
	Rev       string // status.lastAppliedRevision
	Ready     string // status of the Ready condition
	Reason    string // its reason
	Healthy   string // status of the Healthy condition
}

func (s step) String() string {
	return fmt.Sprintf("health=%s ready=%s/%s healthyCond=%s rev=%.7s unhealthy=%q", orDash(s.Health), orDash(s.Ready), orDash(s.Reason), orDash(s.Healthy), s.Rev, s.Unhealthy)
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// recorder watches one Guard and keeps every distinct state of its status
// in order, so a test can tell what a person running kubectl get -w saw.
type recorder struct {
	name  string
	start time.Time

	mu    sync.Mutex
	steps []step
}

// record starts watching Guard name until the test ends.
func record(t *testing.T, name string) *recorder {
	t.Helper()
	wc, err := client.NewWithWatch(h.Cluster.Config, client.Options{Scheme: app.Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	r := &recorder{name: name, start: time.Now()}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	t.Cleanup(func() {
		cancel()
		<-done
		t.Logf("guard %s:\n%s", name, r)
	})
	go func() {
		defer close(done)
		for ctx.Err() == nil {
			w, err := wc.Watch(ctx, &v1alpha1.GuardList{}, &client.ListOptions{FieldSelector: fields.OneTermEqualSelector("metadata.name", name)})
			if err != nil {
				time.Sleep(100 * time.Millisecond)
				continue
			}
			for ev := range w.ResultChan() {
				if g, ok := ev.Object.(*v1alpha1.Guard); ok {
					r.add(g)
				}
			}
			w.Stop()
		}
	}()
	return r
}

func (r *recorder) add(g *v1alpha1.Guard) {
	s := step{At: time.Now(), Health: g.Status.Health, Unhealthy: unhealthyText(g.Status.Unhealthy), Rev: g.Status.LastAppliedRevision}
	if c := meta.FindStatusCondition(g.Status.Conditions, v1alpha1.ConditionReady); c != nil {
		s.Ready, s.Reason = string(c.Status), c.Reason
	}
	if c := meta.FindStatusCondition(g.Status.Conditions, v1alpha1.ConditionHealthy); c != nil {
		s.Healthy = string(c.Status)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if n := len(r.steps); n > 0 {
		last := r.steps[n-1]
		last.At = s.At
		if last.String() == s.String() {
			return
		}
	}
	r.steps = append(r.steps, s)
}

func (r *recorder) snapshot() []step {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.steps)
}

// await waits for a step at index from or later that satisfies ok, and
// returns its index.
func (r *recorder) await(t *testing.T, from int, timeout time.Duration, what string, ok func(step) bool) int {
	t.Helper()
	found := -1
	wait.Eventually(t, timeout, fmt.Sprintf("guard %s: %s", r.name, what), func() error {
		steps := r.snapshot()
		for i := from; i < len(steps); i++ {
			if ok(steps[i]) {
				found = i
				return nil
			}
		}
		return fmt.Errorf("seen so far:\n%s", r)
	})
	return found
}

// healths is the sequence of status.health values in steps[from:to], with
// repeats (and unset values) collapsed.
func (r *recorder) healths(from, to int) []string {
	steps := r.snapshot()
	var out []string
	for _, s := range steps[from:min(to, len(steps))] {
		if s.Health != "" && (len(out) == 0 || out[len(out)-1] != s.Health) {
			out = append(out, s.Health)
		}
	}
	return out
}

func (r *recorder) String() string {
	var b strings.Builder
	for _, s := range r.snapshot() {
		fmt.Fprintf(&b, "  +%6.2fs %s\n", s.At.Sub(r.start).Seconds(), s)
	}
	return b.String()
}

// unhealthyText is status.unhealthy as the Healthy condition's message
// lists it: "Kind namespace/name: State: message".
func unhealthyText(list []v1alpha1.UnhealthyObject) []string {
	var out []string
	for _, u := range list {
		name := u.Kind + " " + u.Name
		if u.Namespace != "" {
			name = u.Kind + " " + u.Namespace + "/" + u.Name
		}
		text := name + ": " + u.State
		if u.Message != "" {
			text += ": " + u.Message
		}
		out = append(out, text)
	}
	return out
}

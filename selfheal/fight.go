package selfheal

import (
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

// fightsGauge counts the fights going on, by Guard (docs/observability.md).
var fightsGauge = prometheus.NewGaugeVec(prometheus.GaugeOpts{
	Name: "driftguard_fights",
	Help: "Fights going on: objects the guard stopped reverting because a controller put the same change back after every revert; a fight ends when the object is in sync again or Git changes.",
}, []string{"guard"})

func init() { metrics.Registry.MustRegister(fightsGauge) }

// Fight detection: when the guard keeps reverting the same object against
// the same controller (an operator, admitted by the policy and then reverted)
// that puts back the same values every time, reverting again only feeds a
// loop. After fightLimit such reverts within fightWindow the guard stops
// reverting that object for that controller and says so, naming it and the
// ignore rule that would end the fight. The controller is a verified
// identity (attribution.controller), never a field manager's name, which any
// writer chooses. Changes to different values each time (a load test) are
// not a fight.
const (
	fightLimit  = 5
	fightWindow = 2 * time.Minute
)

type fightKey struct {
	it      item
	manager string
}

// countKey is a fightKey and the changes the manager made, as a signature.
type countKey struct {
	fightKey
	changes string
}

type fights struct {
	mu      sync.Mutex
	reverts map[countKey][]time.Time
	stopped map[fightKey]string // -> guard
	// series are the Guards with a driftguard_fights series, dropped with
	// the Guard (forgetGuards).
	series map[string]bool
	// swept is when reverts was last cleared of counts older than
	// fightWindow. Each distinct change is a key of its own, so a manager
	// that writes new values every time (a timestamp, a load test) would
	// otherwise grow the map by one entry per revert, for good.
	swept time.Time
}

func newFights() *fights {
	return &fights{reverts: map[countKey][]time.Time{}, stopped: map[fightKey]string{}, series: map[string]bool{}}
}

// allow reports whether the guard may revert it against manager now.
func (f *fights) allow(it item, manager string) bool {
	if manager == "" {
		return true
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	_, stopped := f.stopped[fightKey{it, manager}]
	return !stopped
}

// reverted counts a revert against a controller; it returns true when this
// revert starts a fight. A change by no controller ("") never counts:
// repeating an edit must not switch self-heal off.
func (f *fights) reverted(it item, manager, changes, guard string, now time.Time) bool {
	if manager == "" {
		return false
	}
	k := countKey{fightKey{it, manager}, changes}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.sweep(now)
	times := f.reverts[k][:0]
	for _, t := range f.reverts[k] {
		if now.Sub(t) < fightWindow {
			times = append(times, t)
		}
	}
	times = append(times, now)
	f.reverts[k] = times
	if len(times) > fightLimit {
		if _, already := f.stopped[k.fightKey]; !already {
			fightsGauge.WithLabelValues(guard).Inc()
			f.series[guard] = true
		}
		f.stopped[k.fightKey] = guard
		delete(f.reverts, k)
		return true
	}
	return false
}

// sweep drops, once per fightWindow, the counts whose latest revert is
// older than fightWindow: they can no longer start a fight.
func (f *fights) sweep(now time.Time) {
	if now.Sub(f.swept) < fightWindow {
		return
	}
	f.swept = now
	for k, times := range f.reverts {
		if len(times) == 0 || now.Sub(times[len(times)-1]) >= fightWindow {
			delete(f.reverts, k)
		}
	}
}

// stoppedFor reports whether the guard stopped reverting the object for any manager.
func (f *fights) stoppedFor(it item) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	for k := range f.stopped {
		if k.it == it {
			return true
		}
	}
	return false
}

// forget ends every fight over the object (it is in sync again, or Git changed).
func (f *fights) forget(it item) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for k, guard := range f.stopped {
		if k.it == it {
			delete(f.stopped, k)
			fightsGauge.WithLabelValues(guard).Dec()
		}
	}
}

// forgetGuards ends the fights of the Guards that are gone (exists says
// false: deleted, or no longer this guard's to keep) and drops their
// driftguard_fights series.
func (f *fights) forgetGuards(exists func(guard string) bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for guard := range f.series {
		if exists(guard) {
			continue
		}
		for k, g := range f.stopped {
			if g == guard {
				delete(f.stopped, k)
			}
		}
		delete(f.series, guard)
		fightsGauge.DeleteLabelValues(guard)
	}
}

// of lists the fights of a guard, as messages a person can act on.
func (f *fights) of(guard string) []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []string
	for k, g := range f.stopped {
		if g == guard {
			out = append(out, fightMessage(k.it, k.manager, ""))
		}
	}
	sort.Strings(out)
	return out
}

func fightMessage(it item, controller, manager string) string {
	if manager == "" {
		manager = "<its field manager>"
	}
	return fmt.Sprintf("%s is changed back by %s after every revert; stopped reverting it. "+
		"If %s owns these fields, add to the Guard: ignore: [{group: %q, kind: %s, name: %s, managedFieldsManagers: [%q], users: [%q]}]",
		it.key().Display(), controller, controller, it.gvk.Group, it.gvk.Kind, it.name, manager, controller)
}

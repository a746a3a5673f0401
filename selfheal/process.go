package selfheal

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/driftguard/driftguard/api/v1alpha1"
	"github.com/driftguard/driftguard/apply"
	"github.com/driftguard/driftguard/audit"
	"github.com/driftguard/driftguard/decision"
	"github.com/driftguard/driftguard/drift"
	"github.com/driftguard/driftguard/policy"
	"github.com/driftguard/driftguard/render"
)

func (w *Watcher) processNext(ctx context.Context) bool {
	it, shutdown := w.queue.Get()
	if shutdown {
		return false
	}
	defer w.queue.Done(it)
	if err := w.handle(ctx, it); err != nil {
		w.Log.Error(err, "self-heal failed; retrying with backoff", "object", it.key().String())
		w.queue.AddRateLimited(it)
		return true
	}
	w.queue.Forget(it)
	return true
}

// handle compares the cached live object with Git and acts on a
// difference: it records the drift with the policy's decision and, with
// self-heal on, puts Git's state back.
func (w *Watcher) handle(ctx context.Context, it item) error {
	ev, ok := w.drifted(ctx, it)
	if !ok {
		return nil
	}
	if w.state.mark(it, ev.guard, ev.paths()) {
		w.notify(ev.guard)
	}
	d, rec, expired := w.record(ctx, ev)
	if !w.Settings.SelfHeal(ev.guard) || (d.Action != policy.Revert && d.Action != policy.Deny) {
		return nil
	}
	return w.heal(ctx, ev, d, rec, expired)
}

// driftEvent is one difference between a live object and Git, as handle
// sees it.
type driftEvent struct {
	it        item
	guard     string
	want      *render.Object
	live      *unstructured.Unstructured // nil: deleted
	changes   []drift.Change
	operation string // DRIFT or DELETE
	seen      time.Time
	who       attribution
}

// paths are the changed paths; nil for a deleted object.
func (ev *driftEvent) paths() []string {
	if ev.live == nil {
		return nil
	}
	return changedPaths(ev.changes)
}

// drifted compares the cached live object of it with Git; false when there
// is nothing to act on (not managed, in sync, or the state the guard
// reverted from).
func (w *Watcher) drifted(ctx context.Context, it item) (*driftEvent, bool) {
	guard, want, ok := w.Store.Lookup(it.key())
	if !ok {
		w.notify(w.state.clear(it))
		return nil, false
	}
	w.mu.Lock()
	ki := w.informers[it.gvk]
	w.mu.Unlock()
	if ki == nil {
		return nil, false
	}
	ev := &driftEvent{it: it, guard: guard, want: want, live: getCached(ki.informer, it.namespace, it.name), operation: "DRIFT", seen: time.Now()}
	if ev.live == nil {
		// Gone from the informers' view: deleted, or its guard label
		// taken off (the informers select by it). An object still there
		// is drift like any other, reverted as such: recreated from the
		// whole of Git, it would lose the fields ignore rules leave to
		// their owner (an autoscaler's replicas).
		if ev.live = w.unlabelled(ctx, ki, it); ev.live == nil {
			ev.operation = "DELETE"
			ev.who = w.attribute(nil, want.Key, ev.seen)
			return ev, true
		}
	}
	ev.who = w.attribute(ev.live, want.Key, ev.seen)
	ev.changes = w.compare(ctx, ki, guard, want, ev.live, ev.who)
	if len(ev.changes) == 0 {
		w.notify(w.state.clear(it))
		w.fights.forget(it)
		return nil, false
	}
	// The state we reverted from: our write's event is on its way.
	return ev, !w.state.alreadyReverted(it, ev.live.GetResourceVersion())
}

// appliedSince reports whether live's managed fields hold an entry of the
// guard's own apply written at or after since.
func appliedSince(live *unstructured.Unstructured, since time.Time) bool {
	md, _ := live.Object["metadata"].(map[string]any)
	entries, _ := md["managedFields"].([]any)
	for _, e := range entries {
		if m, _ := e.(map[string]any); guardApply(m) && drift.WrittenSince(m, since) {
			return true
		}
	}
	return false
}

// guardApply reports whether a managed-fields entry is the guard's
// server-side apply (whose set, the largest, the cache does not keep).
func guardApply(entry map[string]any) bool {
	return entry["manager"] == apply.FieldManager && entry["operation"] == "Apply"
}

// read reads live again from the API server, whole; nil when it cannot.
func (w *Watcher) read(ctx context.Context, ki *kindInformer, live *unstructured.Unstructured) *unstructured.Unstructured {
	if w.Dynamic == nil || ki == nil {
		return nil
	}
	u, err := w.Dynamic.Resource(ki.gvr).Namespace(live.GetNamespace()).Get(ctx, live.GetName(), metav1.GetOptions{})
	if err != nil {
		return nil
	}
	return u
}

// unlabelled reads an object the informer no longer holds from the API
// server, as the cache would hold it: nil when it is gone (or cannot be
// read: then it is treated as gone, and the apply that recreates it finds
// it).
func (w *Watcher) unlabelled(ctx context.Context, ki *kindInformer, it item) *unstructured.Unstructured {
	if w.Dynamic == nil {
		return nil
	}
	u, err := w.Dynamic.Resource(ki.gvr).Namespace(it.namespace).Get(ctx, it.name, metav1.GetOptions{})
	if err != nil {
		return nil
	}
	stripped, _ := stripForCache(u)
	return stripped.(*unstructured.Unstructured)
}

// record asks the policy what to do with the drift and writes the drift
// record (once per object state and decision). A break-glass change is
// kept for the Guard's TTL from the change, then reverted unless Git
// adopted it: expired says that time is up.
func (w *Watcher) record(ctx context.Context, ev *driftEvent) (d policy.Decision, rec audit.Record, expired bool) {
	res := w.decide(ctx, ev.guard, ev.want, ev.live, ev.changes, ev.who)
	d = res.Decision()
	if res.Temporary && ev.live != nil {
		ttl := w.Settings.BreakGlassTTL(ev.guard)
		if left := ev.who.at.Add(ttl).Sub(ev.seen); left > 0 {
			w.queue.AddAfter(ev.it, left)
		} else {
			expired = true
			d = policy.Decision{Action: policy.Revert, Rule: decision.RuleBreakGlassExpired,
				Reason: fmt.Sprintf("%s by %s expired after %s; Git did not adopt the change", res.Rule, ev.who.user, ttl)}
		}
	}
	rec = audit.Record{
		Type: audit.Drift, Guard: ev.guard, User: ev.who.user, Groups: ev.who.groups, Manager: ev.who.manager, Operation: ev.operation,
		Object: audit.ObjectOf(ev.want), Fields: audit.FieldsOf(ev.changes), Action: string(d.Action),
		Reason: d.Reason, Rule: d.Rule, PolicyRevision: w.policyRevision(), Source: audit.SourceOf(ev.want.Source),
	}
	if !expired {
		rec.PolicyAction = string(res.PolicyAction)
	}
	if expired || !w.state.recordedBefore(ev.it, ev.live, d) {
		w.Audit.Log(ctx, rec)
	}
	w.state.accept(ev.it, d.Action == policy.Allow || d.Action == policy.Warn)
	return d, rec, expired
}

// heal puts Git's state back (additions removed, the object reverted or
// recreated) unless a controller fights over it, and records the revert.
func (w *Watcher) heal(ctx context.Context, ev *driftEvent, d policy.Decision, rec audit.Record, expired bool) error {
	it, who := ev.it, ev.who
	controller := who.controller(it.namespace)
	if !w.fights.allow(it, controller) {
		return nil
	}
	if w.fights.reverted(it, controller, changeSignature(ev.changes), ev.guard, ev.seen) {
		msg := fightMessage(it, controller, who.manager)
		w.Log.Info("fight detected; no longer reverting", "object", it.key().String(), "controller", controller, "manager", who.manager)
		w.Audit.Log(ctx, audit.Record{Type: audit.Error, Guard: ev.guard, User: who.user, Manager: who.manager, Operation: "REVERT",
			Object: rec.Object, Fields: rec.Fields, Action: "stopped", Rule: decision.RuleFightDetected, Reason: msg, Source: rec.Source})
		w.notify(ev.guard)
		return nil
	}
	a, err := w.Applier.ForGuard(ctx, ev.guard)
	switch {
	case err != nil:
	case apply.Locked(ev.want, ev.live):
		// Made immutable: no change of it is accepted; it is deleted
		// (as it was seen, no newer one) and created from Git.
		err = a.ReplaceLocked(ctx, ev.want, ev.live)
	default:
		// What a forced apply leaves in place goes first; then Git's
		// state goes back (the object is recreated when gone).
		err = a.RemoveAdditions(ctx, ev.live, additions(ev.changes))
		if err == nil {
			_, err = a.Revert(ctx, ev.want, ev.live)
		}
	}
	if err != nil {
		// Retried with backoff; recorded once per object state and error.
		if !w.state.failedBefore(it, ev.live, err) {
			w.Audit.Log(ctx, audit.Record{Type: audit.Error, Guard: ev.guard, Operation: "REVERT", Object: rec.Object,
				Source: rec.Source, Error: err.Error()})
		}
		return err
	}
	if expired {
		if err := a.ClearAnnotations(ctx, ev.live, v1alpha1.BreakGlassAnnotation, v1alpha1.ChangedByAnnotation); err != nil {
			w.Log.Error(err, "clear break-glass annotations", "object", it.key().String())
		}
	}
	typ := audit.Revert
	if ev.live == nil {
		typ = audit.Recreate
	} else {
		w.state.reverted(it, ev.live.GetResourceVersion())
	}
	w.Audit.Log(ctx, audit.Record{Type: typ, Guard: ev.guard, User: who.user, Groups: who.groups, Manager: who.manager, Operation: ev.operation,
		Object: rec.Object, Fields: rec.Fields, Action: string(policy.Revert), Rule: d.Rule, Source: rec.Source,
		DurationMS: float64(time.Since(ev.seen).Microseconds()) / 1000})
	return nil
}

// compare returns the drift of live from want. The first time a difference
// shows for an object at a revision before anything was applied (after a
// restart, say), the API server is asked in a server-side dry run what
// applying Git would store: differences that are only its defaults,
// normalizations, pruning or mutations are then never drift.
func (w *Watcher) compare(ctx context.Context, ki *kindInformer, guard string, want *render.Object, live *unstructured.Unstructured, who attribution) []drift.Change {
	opts := w.Applier.Options(want.Obj(), live.Object)
	// What someone added that Git does not set is drift too; the rest is
	// what Git sets and the cluster holds otherwise. A person who wrote
	// the newest change under the guard's or a control-plane component's
	// manager name added what that entry owns (the cache keeps no fields
	// of the guard's own apply entry: they are read from the API server).
	opts.Borrowed, opts.BorrowedSince = who.personWrote()
	owners := live
	if opts.Borrowed == apply.FieldManager && appliedSince(live, opts.BorrowedSince) {
		if full := w.read(ctx, ki, live); full != nil {
			owners = full
		}
	}
	added := drift.Additions(want.Obj().Object, owners.Object, apply.FieldManager, opts)
	changes := want.Drift(live.Object, opts)
	if len(changes) == 0 {
		return added
	}
	if _, checked := want.ServerValues(); checked {
		return append(changes, added...)
	}
	a, err := w.Applier.ForGuard(ctx, guard)
	if err == nil {
		err = a.DryRun(ctx, want, live)
	}
	if err != nil {
		w.Log.Info("server-side dry run failed; comparing with Git's text", "object", want.Key.String(), "error", err.Error())
		want.SetServerValues(nil) // once per revision: the revert that follows reports the error
		return append(changes, added...)
	}
	return append(want.Drift(live.Object, opts), added...)
}

// additions returns the changes that add what Git does not set.
func additions(changes []drift.Change) []drift.Change {
	var out []drift.Change
	for _, c := range changes {
		if c.Added {
			out = append(out, c)
		}
	}
	return out
}

// changeSignature identifies the values a change set puts in place.
func changeSignature(changes []drift.Change) string {
	var b strings.Builder
	for _, c := range changes {
		fmt.Fprintf(&b, "%s=%v;", c.Path, c.Live)
	}
	return b.String()
}

func (w *Watcher) notify(guard string) {
	if guard != "" && w.Changed != nil {
		w.Changed(guard)
	}
}

func (w *Watcher) policyRevision() string {
	if r, ok := w.Policy.(interface{ Revision() string }); ok {
		return r.Revision()
	}
	return ""
}

// decide asks package decision what to do about drift (operation DRIFT,
// with the object gone when live is nil). A policy error reverts.
func (w *Watcher) decide(ctx context.Context, guard string, want *render.Object, live *unstructured.Unstructured, changes []drift.Change, who attribution) decision.Result {
	c := decision.Change{
		Operation: decision.Drift,
		Gone:      live == nil,
		User:      who.user,
		Groups:    who.groups,
		// The field manager is the writer's claim, kept apart from the user.
		FieldManager: who.manager,
		Resource:     policyResource(want),
		Desired:      want,
		Source:       want.Source,
		Changes:      changes,
		Guard:        guard,
	}
	if live != nil {
		c.Object = live.Object
	}
	var guards decision.Guards
	if w.Settings != nil {
		guards = w.Settings
	}
	res, err := decision.New(w.Policy, guards).Decide(ctx, c)
	switch {
	case errors.Is(err, decision.ErrNoPolicy):
		return decision.Result{Action: policy.Revert, Reason: "no policy configured", Rule: decision.RuleSelfHeal}
	case err != nil:
		w.Log.Error(err, "policy failed on drift; reverting", "object", want.Key.String())
		return decision.Result{Action: policy.Revert, Reason: err.Error(), Rule: decision.RulePolicyError}
	}
	return res
}

// attribution says who last changed an object. The user is the person the
// admission webhook stamped, when the stamp verifies (the guard issued it for
// this object) and belongs to the newest change; otherwise "unknown". The
// field manager of the newest change is kept apart: any writer chooses it.
type attribution struct {
	user    string
	groups  []string
	manager string
	// at is when the change was made: the stamp's time (the guard's clock
	// at admission) when verified, else when the guard first saw it.
	at       time.Time
	verified bool
	// wrote is when the signed stamp says its writer wrote, and
	// wroteAs the field manager they named (the stamp records both).
	wrote   time.Time
	wroteAs string
}

// personWrote is the field manager a verified user who is not the control
// plane (which writes under its own names) named for the newest change,
// and when they wrote it, by the signed stamp; "" otherwise.
func (a attribution) personWrote() (string, time.Time) {
	if !a.verified || a.wroteAs == "" || controlPlaneUser(a.user) {
		return "", time.Time{}
	}
	return a.wroteAs, a.wrote
}

// controlPlaneUser reports whether user is a control-plane component, as
// the default policy's system identities name them.
func controlPlaneUser(user string) bool {
	switch user {
	case "system:kube-controller-manager", "system:kube-scheduler", "system:apiserver":
		return true
	}
	return strings.HasPrefix(user, "system:node:") || strings.HasPrefix(user, "system:serviceaccount:kube-system:")
}

// stampSlack allows for managed-fields times having whole seconds.
const stampSlack = 2 * time.Second

func (w *Watcher) attribute(live *unstructured.Unstructured, key render.ObjectKey, seen time.Time) attribution {
	who := attribution{user: "unknown", manager: "unknown", at: seen}
	if live == nil {
		return who
	}
	var newest, newestSpec, newestGuard time.Time
	// newestSubresource is that of the newest write but status writes
	// (controllers report status all the time; status is never compared).
	newestSubresource := ""
	// The entries are read in place: GetManagedFields converts each one,
	// field sets and all, to the typed form, for a name and a time.
	md, _ := live.Object["metadata"].(map[string]any)
	entries, _ := md["managedFields"].([]any)
	for _, e := range entries {
		mf, _ := e.(map[string]any)
		manager, _ := mf["manager"].(string)
		stamp, _ := mf["time"].(string)
		t, err := time.Parse(time.RFC3339, stamp)
		if err != nil {
			continue
		}
		if manager == apply.FieldManager {
			if sub, _ := mf["subresource"].(string); sub == "" && t.After(newestGuard) {
				newestGuard = t
			}
			continue
		}
		if who.manager == "unknown" || t.After(newest) {
			who.manager, newest = manager, t
		}
		if sub, _ := mf["subresource"].(string); sub != "status" && (newestSpec.IsZero() || t.After(newestSpec)) {
			newestSpec, newestSubresource = t, sub
		}
	}
	if w.Stamps != nil {
		c, ok := w.Stamps.Verify(live.GetAnnotations()[v1alpha1.ChangedByAnnotation], key.String())
		if ok && !c.Time.Before(newest.Add(-stampSlack)) {
			who.user, who.groups, who.at, who.verified = c.User, c.Groups, c.Time, true
			who.wrote, who.wroteAs = c.Time, c.Manager
			return who
		}
	}
	// While the compiled stamp policy is in force the API server writes the
	// last writer's name on every update, whoever they are: a change made
	// while the guard was down is attributed when it is back.
	// The stamp policy matches writes of the object itself, not of its
	// subresources: after a write of /scale (or /status) the annotation
	// still names whoever wrote the object before, so it is not the
	// newest change's writer. It matches updates of managed objects, not
	// the guard's: when the guard's apply is newer than every other write,
	// the annotation may come from before the object was managed (a
	// create, which anyone may annotate). (Times have whole seconds: a
	// write in the same second as the guard's counts as after it.) And in
	// a namespace its binding leaves out, or on a resource it does not
	// match, anyone writes it.
	if w.APIServerStamps != nil && w.APIServerStamps(live.GetNamespace(), live.GroupVersionKind()) && newestSubresource == "" && !newestSpec.IsZero() && !newestGuard.After(newestSpec) {
		if u := live.GetAnnotations()[v1alpha1.APIServerChangedByAnnotation]; u != "" {
			who.user, who.verified = u, true
		}
	}
	return who
}

// controller is the identity a fight is counted against: a verified service
// account of another namespace than the object's, which is how controllers
// run. A person, an unverified writer, or an account of the object's own
// namespace (which that namespace's editors can act as) is never one, so
// none of them can make the guard stop reverting.
func (a attribution) controller(namespace string) string {
	const prefix = "system:serviceaccount:"
	if !a.verified || !strings.HasPrefix(a.user, prefix) {
		return ""
	}
	ns, _, _ := strings.Cut(strings.TrimPrefix(a.user, prefix), ":")
	if ns == namespace {
		return ""
	}
	return a.user
}

func policyResource(o *render.Object) policy.Resource {
	gvk := o.GVK()
	return policy.Resource{Group: gvk.Group, Version: gvk.Version, Kind: gvk.Kind, Namespace: o.Key.Namespace, Name: o.Key.Name}
}

// driftState remembers which objects differ from Git, and the live state each
// revert started from, so that a stale cache does not revert twice.
type driftState struct {
	mu       sync.Mutex
	drifted  map[item]driftMark
	revertRV map[item]string
	recorded map[item]string // item -> live state and action last recorded
	failed   map[item]string // item -> live state and error of the last failed revert recorded
	accepted map[item]bool   // drift the policy accepted (break-glass, warn, enforcement off)
}

func (s *driftState) accept(it item, accepted bool) {
	s.mu.Lock()
	if accepted {
		s.accepted[it] = true
	} else {
		delete(s.accepted, it)
	}
	s.mu.Unlock()
}

func (s *driftState) isAccepted(it item) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.accepted[it]
}

func newDriftState() *driftState {
	return &driftState{drifted: map[item]driftMark{}, revertRV: map[item]string{}, recorded: map[item]string{}, failed: map[item]string{}, accepted: map[item]bool{}}
}

// recordedBefore reports whether this live state was already recorded with
// this action, and remembers it: one drift record per object state.
func (s *driftState) recordedBefore(it item, live *unstructured.Unstructured, d policy.Decision) bool {
	state := "deleted/" + string(d.Action)
	if live != nil {
		state = live.GetResourceVersion() + "/" + string(d.Action)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.recorded[it] == state {
		return true
	}
	s.recorded[it] = state
	return false
}

// driftMark is a drifted object's guard and the paths that differ (nil
// when the object is missing).
type driftMark struct {
	guard string
	paths []string
}

// maxPathsKept bounds the paths kept of one drifted object.
const maxPathsKept = 10

// changedPaths returns the paths of changes, at most maxPathsKept.
func changedPaths(changes []drift.Change) []string {
	paths := make([]string, 0, min(len(changes), maxPathsKept))
	for _, c := range changes {
		if len(paths) == maxPathsKept {
			break
		}
		if !slices.Contains(paths, c.Path) {
			paths = append(paths, c.Path)
		}
	}
	return paths
}

// mark records the object as drifted at paths (nil: missing); it returns
// true when that is news (newly drifted, or at other paths).
func (s *driftState) mark(it item, guard string, paths []string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	old, had := s.drifted[it]
	s.drifted[it] = driftMark{guard: guard, paths: paths}
	return !had || old.guard != guard || !slices.Equal(old.paths, paths) || (old.paths == nil) != (paths == nil)
}

// pathsOf returns the paths at which the object drifted; ok is false when
// it has not drifted, paths nil when it is missing.
func (s *driftState) pathsOf(it item) (paths []string, ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	m, ok := s.drifted[it]
	return m.paths, ok
}

// clear forgets the object's drift; it returns the guard when it had drifted.
func (s *driftState) clear(it item) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	guard := s.drifted[it].guard
	delete(s.drifted, it)
	delete(s.revertRV, it)
	delete(s.recorded, it)
	delete(s.failed, it)
	delete(s.accepted, it)
	return guard
}

// failedBefore reports whether this failure (live state and error) was
// recorded already, and remembers it.
func (s *driftState) failedBefore(it item, live *unstructured.Unstructured, err error) bool {
	state := "deleted/" + err.Error()
	if live != nil {
		state = live.GetResourceVersion() + "/" + err.Error()
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.failed[it] == state {
		return true
	}
	s.failed[it] = state
	return false
}

func (s *driftState) reverted(it item, rv string) {
	s.mu.Lock()
	s.revertRV[it] = rv
	s.mu.Unlock()
}

func (s *driftState) alreadyReverted(it item, rv string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return rv != "" && s.revertRV[it] == rv
}

// list returns how many objects of guard drifted, and the names of up to
// limit of them, sorted.
func (s *driftState) list(guard string, limit int) (int, []render.ObjectKey) {
	s.mu.Lock()
	var keys []render.ObjectKey
	n := 0
	for it, m := range s.drifted {
		if m.guard == guard {
			n++
			keys = append(keys, it.key())
		}
	}
	s.mu.Unlock()
	slices.SortFunc(keys, render.CompareKeys)
	if len(keys) > limit {
		keys = keys[:limit]
	}
	return n, keys
}

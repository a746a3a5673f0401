package reconcile

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/go-logr/logr"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/driftguard/driftguard/api/v1alpha1"
	"github.com/driftguard/driftguard/apply"
	"github.com/driftguard/driftguard/render"
)

// Follower gives a replica that is not the leader the desired state, so that
// its webhook answers like the leader's: it fetches and renders every Guard's
// source as the reconciler does (never applying anything), publishes the
// snapshots in the store, and asks the API server in server-side dry runs
// what each object is stored as, for the comparison. It stops when the
// replica becomes the leader: the reconciler takes over, starting from these
// snapshots. Make it with NewFollower.
type Follower struct {
	o FollowerOptions

	mu      sync.Mutex
	fetched map[string]*render.Snapshot // guard -> last fetched snapshot
}

// FollowerOptions configure a Follower; all but Capabilities and Log are
// required.
type FollowerOptions struct {
	Client  client.Client
	Cache   cache.Cache
	Fetcher Fetcher
	Store   *render.Store
	Applier *apply.Applier
	// Inventory, when set, gives each Guard of Shard first what it applied
	// before (render.Store.Reserve), as the leader does.
	Inventory *InventoryStore
	// Shard is the leader's (GuardReconciler.Shard).
	Shard string
	// Capabilities are the cluster's capabilities for charts, as the leader's.
	Capabilities *ClusterCapabilities
	// Elected is closed when this replica becomes the leader (the
	// manager's Elected).
	Elected <-chan struct{}
	// Namespace is where spec.git.secretRef is looked up when it names no
	// namespace (the reconciler's SecretNamespace).
	Namespace string
	// Interval is how often every source is fetched again (at least 5 s).
	Interval time.Duration
	Log      logr.Logger
}

// NewFollower returns a Follower ready to start, or an error naming the
// required option that is missing.
func NewFollower(o FollowerOptions) (*Follower, error) {
	switch {
	case o.Client == nil || o.Cache == nil:
		return nil, errors.New("follower: no Client or Cache")
	case o.Fetcher == nil || o.Store == nil || o.Applier == nil:
		return nil, errors.New("follower: no Fetcher, Store or apply.Applier")
	case o.Elected == nil:
		return nil, errors.New("follower: no Elected channel")
	}
	return &Follower{o: o}, nil
}

// NeedLeaderElection is false: it runs until this replica leads.
func (f *Follower) NeedLeaderElection() bool { return false }

// Start follows the Guards' sources until ctx ends or this replica is elected.
func (f *Follower) Start(ctx context.Context) error {
	select {
	case <-f.o.Elected:
		return nil // the leader from the start (or no election): the reconciler does it
	default:
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		select {
		case <-f.o.Elected:
			cancel()
		case <-ctx.Done():
		}
	}()
	kick := make(chan struct{}, 1)
	poke := func(any) {
		select {
		case kick <- struct{}{}:
		default:
		}
	}
	inf, err := f.o.Cache.GetInformer(ctx, &v1alpha1.Guard{})
	if err != nil {
		if ctx.Err() != nil {
			return nil // elected, or stopping, while the cache synced
		}
		return err
	}
	reg, err := inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc: poke, UpdateFunc: func(_, n any) { poke(n) }, DeleteFunc: poke,
	})
	if err != nil {
		return err
	}
	defer func() { _ = inf.RemoveEventHandler(reg) }()
	f.fetched = map[string]*render.Snapshot{}
	interval := max(f.o.Interval, 5*time.Second)
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for {
		f.follow(ctx)
		select {
		case <-ctx.Done():
			f.o.Log.Info("stopped following: this replica leads, or stops")
			return nil
		case <-kick:
		case <-tick.C:
		}
	}
}

// follow publishes the snapshot of every Guard and forgets deleted ones.
func (f *Follower) follow(ctx context.Context) {
	var guards v1alpha1.GuardList
	if err := f.o.Client.List(ctx, &guards); err != nil {
		f.o.Log.Info("list guards", "error", err.Error())
		return
	}
	// Each Guard first claims what it applied, as on the leader.
	if f.o.Inventory != nil {
		if err := reserveHoldings(ctx, f.o.Store, f.o.Inventory, f.o.Shard, func() ([]v1alpha1.Guard, error) { return guards.Items, nil }); err != nil {
			f.o.Log.Info("inventories not read; nothing published until they are", "error", err.Error())
			return
		}
	}
	live := map[string]bool{}
	for i := range guards.Items {
		g := &guards.Items[i]
		live[g.Name] = true
		if ctx.Err() != nil {
			return
		}
		if err := f.followOne(ctx, g); err != nil {
			f.o.Log.V(1).Info("source not followed; the webhook keeps the last snapshot", "guard", g.Name, "error", err.Error())
		}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	for name := range f.fetched {
		if !live[name] {
			delete(f.fetched, name)
		}
	}
	// Also the Guards only reserved (never fetched here): a deleted one
	// would keep its objects from every other Guard.
	for _, name := range f.o.Store.Guards() {
		if !live[name] {
			f.o.Store.Remove(name)
		}
	}
}

func (f *Follower) followOne(ctx context.Context, g *v1alpha1.Guard) error {
	if g.Status.LastAppliedRevision == "" {
		return nil // nothing in force yet
	}
	// spec.helm.valuesFrom is read as the Guard's identity, as on the
	// leader, so that both render the same.
	values, err := f.o.Applier.ForGuard(ctx, g.Name)
	if err != nil {
		return err
	}
	req, err := RequestIn(ctx, f.o.Client, g, f.o.Namespace, RenderCluster{Values: values.Client, Capabilities: f.o.Capabilities})
	if err != nil {
		return err
	}
	// The revision the leader has in force, not the newest: a newer one may
	// wait for a manual sync or a sync window. (A bucket keeps no history:
	// the newest it is.)
	if pinned, ok := PinRevision(req, g.Status.LastAppliedRevision); ok {
		req = pinned
	}
	_, snap, err := f.o.Fetcher.Fetch(ctx, req)
	if err != nil {
		return err // a bad revision: the last good one stays, as on the leader
	}
	f.mu.Lock()
	same := f.fetched[g.Name] == snap
	f.mu.Unlock()
	if same {
		return nil
	}
	decorated, err := apply.Decorate(f.o.Client, g.Name, snap)
	if err != nil {
		return err
	}
	if prev, ok := f.o.Store.Snapshot(g.Name); ok {
		decorated.InheritServerValues(prev)
	}
	select {
	case <-f.o.Elected:
		return nil // the reconciler owns the store now
	default:
	}
	f.o.Store.Set(g.Name, decorated)
	f.mu.Lock()
	f.fetched[g.Name] = snap
	f.mu.Unlock()
	f.o.Log.Info("following a Guard's source for the webhook", "guard", g.Name, "revision", decorated.Revision, "objects", len(decorated.Objects))
	f.serverValues(ctx, g.Name, decorated)
	return nil
}

// serverValues asks the API server, in a server-side dry run, what each
// object is stored as, so the webhook compares like the leader's.
func (f *Follower) serverValues(ctx context.Context, guard string, snap *render.Snapshot) {
	// The dry runs act as the Guard's identity, as the leader's applies do.
	applier, err := f.o.Applier.ForGuard(ctx, guard)
	if err != nil {
		f.o.Log.V(1).Info("no server-side dry runs; the webhook compares with Git's text", "guard", guard, "error", err.Error())
		return
	}
	for _, o := range snap.Objects {
		if ctx.Err() != nil {
			return
		}
		if _, checked := o.ServerValues(); checked {
			continue
		}
		if err := applier.DryRun(ctx, o, nil); err != nil {
			f.o.Log.V(1).Info("server-side dry run failed; the webhook compares with Git's text", "object", o.Key.String(), "error", err.Error())
			o.SetServerValues(nil)
		}
	}
}

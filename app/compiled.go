package app

import (
	"context"
	"fmt"
	"reflect"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/driftguard/driftguard/api/v1alpha1"
	"github.com/driftguard/driftguard/apply"
	"github.com/driftguard/driftguard/compiled"
	"github.com/driftguard/driftguard/policy"
	"github.com/driftguard/driftguard/render"
	"github.com/driftguard/driftguard/settings"
	"github.com/driftguard/driftguard/webhook"
)

// Admission modes (--admission-mode).
const (
	// ModeWebhook decides every change in the guard's webhooks.
	ModeWebhook = "webhook"
	// ModeBoth adds the compiled admission policies: the webhooks decide
	// and record while the guard is up; the API server denies by itself
	// what the default policy denies while it is not.
	ModeBoth = "both"
	// ModeCompiled leaves to the API server's compiled policies every
	// update, delete and scale write of a managed object they can decide:
	// the webhooks see only creates and what the policies leave to them.
	ModeCompiled = "compiled"
)

// settle is how long the API server is given to load policies the guard
// has just created before the webhooks stop deciding what they decide
// (mode compiled), and before the API server's stamps are trusted: its
// admission plugin picks up new policies and bindings from informers, and
// until then admits what they would deny.
const settle = 5 * time.Second

// maxLeftoverObjects bounds the objects a webhook match condition names;
// beyond it the resources of the objects the compiled policies leave to
// the webhook stand for them.
const maxLeftoverObjects = 200

// compiledLayer keeps the compiled admission policies in force (mode both,
// with the default policy) or removed (mode webhook, or a custom policy,
// which is not compiled: the webhook alone decides by it).
type compiledLayer struct {
	keeper *compiled.Keeper
	cache  cache.Cache
	mode   string
	custom atomic.Bool
	// inForce: the last sync wrote the policies (mode both or compiled,
	// default policy).
	inForce atomic.Bool
	// leftover is what the last sync's index leaves to the webhooks;
	// settling, what the first sync's will leave once the API server has
	// loaded the new policies.
	leftover, settling atomic.Pointer[webhook.Leftover]
	// LeftoverChanged, when set, is called when Leftover changes (the
	// webhook registrar's Sync).
	LeftoverChanged func()
	// fallbacks is how many objects the last sync left to the webhooks.
	fallbacks atomic.Int64
	// excluded are the namespaces the policies' bindings leave out.
	excluded []string
	log      logr.Logger
	mapper   meta.RESTMapper

	stampMu sync.Mutex
	// stampFrom holds the resources the last sync's stamp policy matches,
	// each with the time from which the API server's stamp on it is
	// trusted: a settle after the policy first named it since it last
	// stopped naming it.
	stampFrom map[schema.GroupResource]time.Time
}

// Leftover is what the webhooks decide of managed objects besides creates
// (webhook.Registration.Leftover): nil (everything) but in mode compiled
// with the compiled policies in force.
func (l *compiledLayer) Leftover() *webhook.Leftover {
	if l.mode != ModeCompiled || !l.inForce.Load() {
		return nil
	}
	return l.leftover.Load()
}

// synced is told each index the keeper has put in force. The first after
// the policies were not in force takes effect a settle later.
func (l *compiledLayer) synced(ix compiled.Index) {
	if n := int64(len(ix.Fallbacks)); l.fallbacks.Swap(n) != n && n > 0 {
		var first []string
		for _, f := range ix.Fallbacks[:min(len(ix.Fallbacks), 10)] {
			first = append(first, fmt.Sprintf("%s %s (Guard %s): %s", f.Resource, f.Object, f.Guard, f.Reason))
		}
		l.log.Info("objects the compiled policies leave to the webhook", "count", n, "first", first)
	}
	l.stampResources(ix.Resources, settle)
	left := leftoverOf(ix)
	if l.inForce.Load() {
		l.publish(true, left)
		return
	}
	if l.settling.Swap(left) == nil {
		time.AfterFunc(settle, func() {
			if left := l.settling.Swap(nil); left != nil {
				l.publish(true, left)
			}
		})
	}
}

// removing is told before the policies are removed, or when their state
// is not known: the webhooks take everything back at once.
func (l *compiledLayer) removing() {
	l.settling.Store(nil)
	l.stampResources(nil, 0)
	l.publish(false, nil)
}

// stampResources records the resources of rs as those the stamp policy
// matches: one it did not match before counts after wait (the API server
// loads a changed policy from its informers), one it no longer matches at
// once. (Until 2026-12-06 a timer per sync counted the new ones: a
// resource dropped and named again within a settle was trusted at the
// first timer, before the API server had loaded the policy naming it
// again.)
func (l *compiledLayer) stampResources(rs []compiled.Resource, wait time.Duration) {
	from := time.Now().Add(wait)
	l.stampMu.Lock()
	defer l.stampMu.Unlock()
	next := make(map[schema.GroupResource]time.Time, len(rs))
	for _, r := range rs {
		gr := schema.GroupResource{Group: r.Group, Resource: r.Resource}
		if t, ok := l.stampFrom[gr]; ok {
			next[gr] = t
		} else {
			next[gr] = from
		}
	}
	l.stampFrom = next
}

func (l *compiledLayer) publish(in bool, left *webhook.Leftover) {
	wasIn, was := l.inForce.Swap(in), l.leftover.Swap(left)
	if (wasIn != in || !reflect.DeepEqual(was, left)) && l.LeftoverChanged != nil {
		l.LeftoverChanged()
	}
}

// leftoverOf is what ix leaves to the webhooks.
func leftoverOf(ix compiled.Index) *webhook.Leftover {
	left := &webhook.Leftover{Users: ix.DeferredUsers()}
	for _, f := range ix.Fallbacks {
		r := webhook.Resource{Group: f.Object.Group, Resource: f.Resource}
		if !slices.Contains(left.Resources, r) {
			left.Resources = append(left.Resources, r)
		}
		left.Objects = append(left.Objects, f.Resource+"."+f.Object.Group+"_"+f.Object.Namespace+"/"+f.Object.Name)
	}
	slices.Sort(left.Objects)
	left.Objects = slices.Compact(left.Objects)
	if len(left.Objects) > maxLeftoverObjects {
		left.Objects = nil
	} else {
		left.Resources = nil
	}
	return left
}

// StampsInForce reports whether the API server stamps every update of a
// managed object of kind gvk in namespace: the compiled
// MutatingAdmissionPolicy is in force, its binding selects the namespace
// (an excluded one is not, and there anyone may write the annotation), and
// it matches the object's resource (that of a managed object of a
// rendered revision; on any other the annotation is anyone's to write).
func (l *compiledLayer) StampsInForce(namespace string, gvk schema.GroupVersionKind) bool {
	if !l.inForce.Load() || (namespace != "" && slices.Contains(l.excluded, namespace)) {
		return false
	}
	m, err := l.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if err != nil {
		return false
	}
	l.stampMu.Lock()
	defer l.stampMu.Unlock()
	from, ok := l.stampFrom[m.Resource.GroupResource()]
	return ok && !time.Now().Before(from)
}

// newCompiledLayer builds the compiled admission layer of mode
// o.AdmissionMode; leftoverChanged, when set, is told when what it leaves
// to the webhooks changes.
func newCompiledLayer(o Options, self string, c client.Client, reader client.Reader, mapper meta.RESTMapper, ch cache.Cache, store *render.Store, rules *settings.Guards, leftoverChanged func(), log logr.Logger) *compiledLayer {
	l := &compiledLayer{cache: ch, mode: o.AdmissionMode, LeftoverChanged: leftoverChanged, excluded: o.excludedNamespaces(), log: log, mapper: mapper}
	opts := compiled.KeeperOptions{
		Client: c, Reader: reader, Mapper: mapper, Log: log,
		Config: compiled.Config{
			Name: o.WebhookConfigName, Namespace: o.Namespace,
			GuardUsers:        append([]string{self}, o.GuardUsers...),
			GuardUserPrefixes: []string{apply.ServiceAccountPrefix(o.Namespace)},
			BreakGlassGroups:  o.BreakGlassGroups,
			ExcludeNamespaces: o.excludedNamespaces(),
		},
		Guards: func() ([]compiled.Guard, error) { return compiledGuards(c, store, rules) },
	}
	if o.WebhookRegister {
		// The generated objects belong to the webhook configuration the
		// chart installs (or the guard registers): helm uninstall deletes
		// it, and the garbage collector what it owns.
		opts.Owner = func(ctx context.Context) (*metav1.OwnerReference, error) {
			var vwc admissionregistrationv1.ValidatingWebhookConfiguration
			if err := reader.Get(ctx, client.ObjectKey{Name: o.WebhookConfigName}, &vwc); err != nil {
				return nil, fmt.Errorf("owner of the compiled policies: %w", err)
			}
			return &metav1.OwnerReference{APIVersion: "admissionregistration.k8s.io/v1", Kind: "ValidatingWebhookConfiguration",
				Name: vwc.Name, UID: vwc.UID, BlockOwnerDeletion: ptr.To(false)}, nil
		}
	}
	opts.Synced = l.synced
	opts.Removing, opts.Removed = l.removing, l.removing
	l.keeper = compiled.NewKeeper(opts)
	store.Subscribe(l.keeper.Changed)
	return l
}

// PolicyLoaded is told the modules of every policy that loads: a custom
// policy switches the compiled layer off (its rules are not compiled).
func (l *compiledLayer) PolicyLoaded(modules map[string]string) {
	custom := !policy.IsDefault(modules)
	if l.custom.Swap(custom) != custom {
		if custom && l.mode != ModeWebhook {
			l.log.Info("a custom policy is in force: the compiled admission policies are removed, the webhook alone decides")
		}
		l.keeper.Changed()
	}
}

// NeedLeaderElection: one writer.
func (l *compiledLayer) NeedLeaderElection() bool { return true }

// Start keeps the compiled objects in force, or removes them, until ctx ends.
func (l *compiledLayer) Start(ctx context.Context) error {
	inf, err := l.cache.GetInformer(ctx, &v1alpha1.Guard{})
	if err != nil {
		return fmt.Errorf("compiled admission policies: watch Guards: %w", err)
	}
	poke := func(any) { l.keeper.Changed() }
	reg, err := inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{AddFunc: poke, UpdateFunc: func(_, n any) { poke(n) }, DeleteFunc: poke})
	if err != nil {
		return err
	}
	defer func() { _ = inf.RemoveEventHandler(reg) }()
	return l.keeper.Run(ctx, func() bool { return l.mode != ModeWebhook && !l.custom.Load() })
}

// compiledGuards lists this process's Guards. One without a snapshot in
// the store yet (the process just started) is pending: what the index
// holds for it stays until it has one.
func compiledGuards(c client.Client, store *render.Store, rules *settings.Guards) ([]compiled.Guard, error) {
	var list v1alpha1.GuardList
	if err := c.List(context.Background(), &list); err != nil {
		return nil, fmt.Errorf("list Guards: %w", err)
	}
	out := make([]compiled.Guard, 0, len(list.Items))
	for _, g := range list.Items {
		name := g.Name
		snap, ok := store.Snapshot(name)
		out = append(out, compiled.Guard{
			Name: name, Snapshot: snap, Pending: !ok, Enforcement: string(g.Spec.Enforcement), Rules: rules.IgnoreRules(name),
			Owns: func(k render.ObjectKey) bool { owner, _, ok := store.Lookup(k); return ok && owner == name },
		})
	}
	return out, nil
}

package app

import (
	"context"
	"fmt"
	"path/filepath"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/driftguard/driftguard/apply"
	"github.com/driftguard/driftguard/audit"
	"github.com/driftguard/driftguard/definitions"
	"github.com/driftguard/driftguard/drift"
	"github.com/driftguard/driftguard/drift/schemas"
	"github.com/driftguard/driftguard/policy"
	"github.com/driftguard/driftguard/protect"
	"github.com/driftguard/driftguard/reconcile"
	"github.com/driftguard/driftguard/render"
	"github.com/driftguard/driftguard/selfheal"
	"github.com/driftguard/driftguard/settings"
	"github.com/driftguard/driftguard/source"
	"github.com/driftguard/driftguard/stamp"
	"github.com/driftguard/driftguard/webhook"
)

// capabilitiesTimeout bounds one discovery of the cluster's capabilities
// for Helm charts.
const capabilitiesTimeout = 30 * time.Second

// deps is what the controllers are built from.
type deps struct {
	mgr     manager.Manager
	cfg     *rest.Config
	kube    kubernetes.Interface
	o       Options
	self    string // the guard's own user
	serving servingCerts
	engine  *policy.Engine
	audit   *audit.Logger
	events  *relay
	log     logr.Logger
}

// controllers are the guard's components that act on Guards and their
// objects, built in the order they read one another.
type controllers struct {
	store     *render.Store
	settings  *settings.Guards
	applier   *apply.Applier
	inventory *reconcile.InventoryStore
	layer     *compiledLayer
	watcher   *selfheal.Watcher
	health    *reconcile.HealthTracker
	registrar *webhook.Registrar // nil without --webhook-register
	guards    *reconcile.GuardReconciler
	status    *reconcile.DriftStatus
	// writes are the Guards' status writes, shared by the reconciler and
	// the drift status writer (reconcile.StatusWrites).
	writes *reconcile.StatusWrites
	stamps *stamp.Signer
}

// newControllers builds the desired state's store, the applier, the
// compiled admission layer, self-heal, health, the webhook registrar, the
// Guard reconciler (and its follower on replicas that do not lead) and the
// drift status writer, adds them to the manager, and binds the relay.
func newControllers(ctx context.Context, d deps) (*controllers, error) {
	c := &controllers{store: render.NewStore(), writes: &reconcile.StatusWrites{}}
	steps := []func(context.Context, deps) error{
		c.addApplier, c.addCompiledLayer, c.addSelfHeal, c.addRegistrar,
		c.addProtection, c.addReconciler, c.addDriftStatus,
	}
	for _, step := range steps {
		if err := step(ctx, d); err != nil {
			return nil, err
		}
	}
	d.events.bind(c)
	return c, nil
}

// addApplier builds the Guards' settings and the server-side apply engine,
// whose writes act as each Guard's identity.
func (c *controllers) addApplier(_ context.Context, d deps) error {
	var global []*drift.Rule
	if d.o.IgnoreFile != "" {
		var err error
		if global, err = reconcile.ReadIgnoreFile(d.o.IgnoreFile); err != nil {
			return fmt.Errorf("--ignore-file: %w", err)
		}
	}
	c.settings = settings.NewGuards(d.mgr.GetClient(), global)
	if d.o.DefaultServiceAccount != "" {
		d.log.Info("Guards without spec.serviceAccountName act as the default service account", "user", apply.ServiceAccountUser(d.o.Namespace, d.o.DefaultServiceAccount))
	}
	c.inventory = &reconcile.InventoryStore{Client: d.mgr.GetClient(), Reader: d.mgr.GetAPIReader(), Namespace: d.o.Namespace, Log: d.log.WithName("inventory")}
	c.applier = &apply.Applier{
		Client: d.mgr.GetClient(), Reader: d.mgr.GetAPIReader(), Rules: c.settings.IgnoreRules, Concurrency: d.o.ApplyConcurrency,
		Identities: identities(d), Schemas: schemas.New(d.kube.Discovery(), d.log.WithName("schemas")),
		Live: d.events, Applied: d.events.applied,
	}
	// Stamps are signed with a key derived from the webhook's serving key.
	c.stamps = stamp.NewSigner(stamp.KeyFromCertificate(d.serving.GetCertificate))
	// A CustomResourceDefinition changed by anyone: its group's schemas
	// and the REST mapping are read again (docs/drift.md).
	return d.mgr.Add(&definitions.Follower{Config: d.cfg, Schemas: c.applier.Schemas, Mapper: d.mgr.GetRESTMapper(), Log: d.log.WithName("definitions")})
}

// identities: whom each Guard's writes act as: its service account,
// impersonated, or the guard itself (docs/security.md, "Per-Guard
// identity").
func identities(d deps) *apply.Identities {
	mgr := d.mgr
	return &apply.Identities{
		Config: d.cfg, Scheme: mgr.GetScheme(), Mapper: mgr.GetRESTMapper(), Own: mgr.GetClient(),
		Namespace: d.o.Namespace, Default: d.o.DefaultServiceAccount, Self: d.self,
		Guards: mgr.GetClient(), ServiceAccounts: mgr.GetClient(),
	}
}

// addCompiledLayer builds the default policy compiled into the API server
// (--admission-mode).
func (c *controllers) addCompiledLayer(ctx context.Context, d deps) error {
	var leftoverChanged func()
	if d.o.WebhookRegister && d.o.AdmissionMode == ModeCompiled {
		leftoverChanged = d.events.leftoverChanged(ctx)
	}
	mgr := d.mgr
	c.layer = newCompiledLayer(d.o, d.self, mgr.GetClient(), mgr.GetAPIReader(), mgr.GetRESTMapper(), mgr.GetCache(), c.store, c.settings, leftoverChanged, d.log.WithName("compiled"))
	return mgr.Add(c.layer)
}

// addSelfHeal builds the drift watcher, which reverts through the applier,
// and the health tracker, which reads what it watches; both take the custom
// health rules of the policy files.
func (c *controllers) addSelfHeal(_ context.Context, d deps) error {
	dyn, err := dynamic.NewForConfig(d.cfg)
	if err != nil {
		return fmt.Errorf("dynamic client: %w", err)
	}
	c.watcher = &selfheal.Watcher{
		Dynamic: dyn, Mapper: d.mgr.GetRESTMapper(), Store: c.store, Applier: c.applier,
		Policy: d.engine, Settings: c.settings, Audit: d.audit, LabelKey: apply.GuardLabel,
		Workers: d.o.Workers, Stamps: c.stamps, APIServerStamps: c.layer.StampsInForce,
		Changed: d.events.driftChanged, HealthChanged: d.events.healthChanged, Log: d.log.WithName("drift"),
	}
	d.engine.OnLoad(onPolicyLoad(c.layer, c.watcher, d.log))
	c.health = &reconcile.HealthTracker{
		Source: c.watcher, Live: c.watcher, Reader: d.mgr.GetAPIReader(), Identities: c.applier.Identities,
		Recheck: d.events.recheck, OnChange: d.events.guardHealthChanged, Owner: c.store.Owner,
	}
	return nil
}

// addRegistrar builds the registrar of the webhook configurations
// (--webhook-register): it reads and writes them straight on the API server
// (never through the manager's cache, which would list every configuration
// in the cluster), registers the CA the webhook serves and the kinds in
// Git, and, with --self-protect, watches the configurations by name and
// restores them.
func (c *controllers) addRegistrar(_ context.Context, d deps) error {
	if !d.o.WebhookRegister {
		return nil
	}
	direct, err := client.New(d.cfg, client.Options{Scheme: d.mgr.GetScheme(), Mapper: d.mgr.GetRESTMapper()})
	if err != nil {
		return err
	}
	opts := webhook.RegistrarOptions{
		Client: direct, Mapper: d.mgr.GetRESTMapper(), Kinds: c.store.Kinds, CA: d.serving.CABundle, Log: d.log.WithName("webhook"),
		Kube: d.kube, Protect: d.o.SelfProtect, Audit: d.audit,
	}
	if d.o.AdmissionMode == ModeCompiled {
		// Registered at once, before the policies are removed.
		opts.Leftover = c.layer.Leftover
	}
	if d.o.DeploymentName != "" {
		opts.Uninstalling = func(ctx context.Context) bool {
			return protect.DeploymentGone(ctx, d.kube, d.o.Namespace, d.o.DeploymentName)
		}
	}
	if c.registrar, err = webhook.NewRegistrar(opts); err != nil {
		return err
	}
	c.store.Subscribe(c.registrar.Changed)
	return nil
}

// addProtection records the changes someone else makes to the guard's own
// Deployment and to Guards (--self-protect).
func (c *controllers) addProtection(_ context.Context, d deps) error {
	if !d.o.SelfProtect {
		return nil
	}
	r, err := protect.NewRecorder(protect.RecorderOptions{
		Kube: d.kube, Cache: d.mgr.GetCache(), Namespace: d.o.Namespace, Deployment: d.o.DeploymentName,
		Shard: d.o.Shard, Audit: d.audit, Log: d.log.WithName("protect"),
	})
	if err != nil {
		return err
	}
	return d.mgr.Add(r)
}

// addReconciler builds the Guard reconciler, its follower on replicas that
// do not lead (--leader-elect), and the push receiver that asks it to
// reconcile at once.
func (c *controllers) addReconciler(_ context.Context, d deps) error {
	caps, err := capabilities(d)
	if err != nil {
		return err
	}
	gitFetcher := source.NewGitFetcher(d.o.GitCacheDir, d.log.WithName("git"))
	gitFetcher.SetOptions(d.o.Sources)
	fetcher := source.New(gitFetcher, filepath.Join(d.o.GitCacheDir, "artifacts"), d.log.WithName("sources"))
	if err := c.addFollower(d, fetcher, caps); err != nil {
		return err
	}
	c.guards = &reconcile.GuardReconciler{
		Client: d.mgr.GetClient(), Fetcher: fetcher, Store: c.store,
		Applier: c.applier, Inventory: c.inventory, Audit: d.audit, Drift: c.watcher, SecretNamespace: d.o.Namespace,
		DefaultInterval: d.o.DefaultInterval, Log: d.log.WithName("reconcile"),
		Health: c.health, Events: d.mgr.GetEventRecorder("driftguard"), Concurrent: d.o.Concurrent, Shard: d.o.Shard, Capabilities: caps,
		Writes: c.writes,
	}
	if c.registrar != nil {
		c.guards.Protect = c.registrar.Sync
	}
	if d.o.PolicyGit != "" {
		guard, path, _ := d.o.PolicyGitSource() // checked by Validate
		c.guards.Policy = &reconcile.PolicySource{Guard: guard, Path: path, Load: d.engine.Load}
	}
	if err := c.guards.SetupWithManager(d.mgr); err != nil {
		return fmt.Errorf("set up guard reconciler: %w", err)
	}
	return addReceiver(d.mgr, d.o, c.guards.Pushed, d.log)
}

// capabilities are what charts see of the cluster (.Capabilities): asked
// by discovery, kept a minute (docs/rendering.md). Its own client, bounded
// in time: Get holds every chart's render while it asks.
func capabilities(d deps) (*reconcile.ClusterCapabilities, error) {
	discoveryCfg := rest.CopyConfig(d.cfg)
	discoveryCfg.Timeout = capabilitiesTimeout
	disc, err := discovery.NewDiscoveryClientForConfig(discoveryCfg)
	if err != nil {
		return nil, fmt.Errorf("discovery client: %w", err)
	}
	return &reconcile.ClusterCapabilities{Discovery: disc, Log: d.log.WithName("capabilities")}, nil
}

// addFollower: with leader election, a replica that does not lead follows
// the Guards' sources so that its webhook answers like the leader's.
func (c *controllers) addFollower(d deps, fetcher reconcile.Fetcher, caps *reconcile.ClusterCapabilities) error {
	if !d.o.LeaderElection {
		return nil
	}
	f, err := reconcile.NewFollower(reconcile.FollowerOptions{
		Client: d.mgr.GetClient(), Cache: d.mgr.GetCache(), Fetcher: fetcher, Store: c.store, Applier: c.applier, Inventory: c.inventory, Shard: d.o.Shard,
		Capabilities: caps, Elected: d.mgr.Elected(), Namespace: d.o.Namespace, Interval: d.o.DefaultInterval, Log: d.log.WithName("follow"),
	})
	if err != nil {
		return err
	}
	return d.mgr.Add(f)
}

// addDriftStatus builds the writer of the Guards' drift and health status,
// which asks the reconciler for a Guard that waits for health; it and
// self-heal run in the manager.
func (c *controllers) addDriftStatus(_ context.Context, d deps) error {
	c.status = &reconcile.DriftStatus{
		Client: d.mgr.GetClient(), Drift: c.watcher, Health: c.health, Store: c.store,
		Requeue: c.guards.Enqueue, Log: d.log.WithName("drift-status"), Writes: c.writes,
	}
	return addAll(d.mgr, c.watcher, c.status)
}

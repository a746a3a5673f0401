package app

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/go-logr/logr"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrlconfig "sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/driftguard/driftguard/api/v1alpha1"
	"github.com/driftguard/driftguard/audit"
	"github.com/driftguard/driftguard/drift"
	"github.com/driftguard/driftguard/drift/schemas"
	"github.com/driftguard/driftguard/gitstore"
	"github.com/driftguard/driftguard/informer"
	"github.com/driftguard/driftguard/notify"
	"github.com/driftguard/driftguard/policy"
	"github.com/driftguard/driftguard/reconcile"
	"github.com/driftguard/driftguard/sources"
	"github.com/driftguard/driftguard/stamp"
	"github.com/driftguard/driftguard/webhook"
)

// managedSelector selects objects carrying the inventory label.
var managedSelector = func() labels.Selector {
	req, err := labels.NewRequirement(reconcile.GuardLabel, selection.Exists, nil)
	if err != nil {
		panic(err) // a constant label key
	}
	return labels.NewSelector().Add(*req)
}()

var skipNameValidation = true

// Scheme knows the built-in kinds, CRDs and Guards.
func Scheme() *runtime.Scheme {
	s := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, apiextensionsv1.AddToScheme, v1alpha1.AddToScheme} {
		if err := add(s); err != nil {
			panic(fmt.Sprintf("build scheme: %v", err)) // a programming error, never input
		}
	}
	return s
}

// capabilitiesTimeout bounds one discovery of the cluster's capabilities
// for Helm charts.
const capabilitiesTimeout = 30 * time.Second

// Run starts the guard against the cluster of cfg and blocks until ctx ends.
// Audit records written to stdout go to out (os.Stdout when nil).
func Run(ctx context.Context, cfg *rest.Config, o Options, log logr.Logger, out io.Writer) error {
	if err := o.Validate(); err != nil {
		return err
	}
	gitstore.SetLimits(o.RenderLimits)
	if out == nil {
		out = os.Stdout
	}
	cfg = rest.CopyConfig(cfg)
	cfg.QPS, cfg.Burst = o.KubeAPIQPS, o.KubeAPIBurst
	// The webhook's serving certificate (set below before anything is
	// served) also serves the metrics under --metrics-secure, and its key
	// signs stamps.
	var serving servingCerts
	servingCert := func(h *tls.ClientHelloInfo) (*tls.Certificate, error) {
		if serving == nil {
			return nil, errors.New("no serving certificate yet")
		}
		return serving.GetCertificate(h)
	}
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:                  Scheme(),
		Logger:                  log,
		Metrics:                 metricsOptions(o, servingCert, log),
		HealthProbeBindAddress:  o.HealthAddr,
		PprofBindAddress:        o.PprofAddr,
		LeaderElection:          o.LeaderElection,
		LeaderElectionID:        leaderElectionID(o.Shard),
		LeaderElectionNamespace: o.Namespace,
		LeaseDuration:           &o.LeaseDuration,
		RenewDeadline:           &o.RenewDeadline,
		RetryPeriod:             &o.RetryPeriod,
		Client:                  client.Options{Cache: &client.CacheOptions{DisableFor: []client.Object{&corev1.Secret{}, &corev1.ConfigMap{}}}},
		// The manager's cache holds Guards and, for prune, the metadata of
		// managed objects only: never every object of a kind in the cluster.
		Cache: cache.Options{
			DefaultLabelSelector: managedSelector,
			ByObject: map[client.Object]cache.ByObject{
				&v1alpha1.Guard{}: {Label: labels.Everything()},
				// The service accounts Guards act as (spec.serviceAccountName),
				// of the guard's own namespace only; watched only once a
				// Guard names one.
				&corev1.ServiceAccount{}: {Label: labels.Everything(), Namespaces: map[string]cache.Config{o.Namespace: {}}},
			},
		},
		// A replica that stops gives up the lease at once: the next one
		// takes over without waiting for it to expire.
		LeaderElectionReleaseOnCancel: true,
		// Run may run more than once in a process (tests): controller names
		// need not be unique.
		Controller: ctrlconfig.Controller{SkipNameValidation: &skipNameValidation},
	})
	if err != nil {
		return fmt.Errorf("create manager: %w", err)
	}
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return fmt.Errorf("kubernetes client: %w", err)
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return fmt.Errorf("dynamic client: %w", err)
	}

	// Who the guard is: its own writes are always allowed by policy.
	self, err := whoAmI(ctx, kube)
	if err != nil {
		return err
	}
	log.Info("guard identity", "user", self)

	// Audit.
	sinks := []audit.Sink{}
	if o.AuditStdout {
		sinks = append(sinks, audit.NewWriterSink("stdout", out))
	}
	if o.AuditFile != "" {
		fs, err := audit.OpenFileSink(o.AuditFile, o.AuditFileMaxMB, o.AuditFileBackups)
		if err != nil {
			return fmt.Errorf("--audit-file: %w", err)
		}
		sinks = append(sinks, fs)
	}
	if o.AuditEvents {
		// Events get a client of their own with a small rate limit, so that a
		// burst of records never starves reverts of API calls.
		evCfg := rest.CopyConfig(cfg)
		evCfg.QPS, evCfg.Burst = 20, 50
		evKube, err := kubernetes.NewForConfig(evCfg)
		if err != nil {
			return fmt.Errorf("events client: %w", err)
		}
		sinks = append(sinks, audit.NewAsyncSink(audit.NewEventSink(evKube, "driftguard"), 1024, 4, o.AuditDrainTimeout))
	}
	for _, name := range notifySecrets(o.NotifySecret) {
		n := &notify.Sink{Config: notifyConfig(mgr.GetAPIReader(), o.Namespace, name), Period: o.NotifyPeriod, Log: log.WithName("notify").WithValues("secret", name)}
		sinks = append(sinks, audit.NewAsyncSink(n, 256, 1, o.AuditDrainTimeout))
	}
	auditLog := audit.NewLogger(log.WithName("audit"), o.AuditQueueSize, sinks...)
	if err := mgr.Add(auditLog); err != nil {
		return err
	}

	// Policy.
	engine := policy.NewEngine(policy.Config{GuardUsers: append([]string{self}, o.GuardUsers...), BreakGlassGroups: o.BreakGlassGroups, Timeout: o.PolicyTimeout}, log.WithName("policy"))
	if o.PolicyDir != "" {
		engine.OnLoadError(func(err error) {
			auditLog.Log(context.Background(), audit.Record{Type: audit.Error, Operation: "POLICY", Error: err.Error(), Source: &audit.Source{URL: "file://" + o.PolicyDir}})
		})
		if err := engine.LoadDir(o.PolicyDir); err != nil {
			log.Error(err, "policy does not compile; the built-in policy serves until it does", "dir", o.PolicyDir)
		}
		if err := mgr.Add(manager.RunnableFunc(func(ctx context.Context) error {
			engine.Watch(ctx, o.PolicyDir, 2*time.Second)
			return nil
		})); err != nil {
			return err
		}
	}

	// Desired state, apply, drift.
	store := gitstore.NewStore()
	settings := &guardSettings{c: mgr.GetClient()}
	if o.IgnoreFile != "" {
		if settings.global, err = reconcile.ReadIgnoreFile(o.IgnoreFile); err != nil {
			return fmt.Errorf("--ignore-file: %w", err)
		}
	}
	// Whom each Guard's writes act as: its service account, impersonated,
	// or the guard itself (docs/security.md, "Per-Guard identity").
	identities := &reconcile.Identities{
		Config: cfg, Scheme: mgr.GetScheme(), Mapper: mgr.GetRESTMapper(), Own: mgr.GetClient(),
		Namespace: o.Namespace, Default: o.DefaultServiceAccount, Self: self,
		Guards: mgr.GetClient(), ServiceAccounts: mgr.GetClient(),
	}
	if o.DefaultServiceAccount != "" {
		log.Info("Guards without spec.serviceAccountName act as the default service account", "user", reconcile.ServiceAccountUser(o.Namespace, o.DefaultServiceAccount))
	}
	applier := &reconcile.Applier{Client: mgr.GetClient(), Reader: mgr.GetAPIReader(), Rules: settings.IgnoreRules, Concurrency: o.ApplyConcurrency, Identities: identities,
		Schemas: schemas.New(kube.Discovery(), log.WithName("schemas"))}
	// Stamps are signed with a key derived from the webhook's serving key.
	stamps := stamp.NewSigner(stamp.KeyFromCertificate(servingCert))
	watcher := &informer.Watcher{
		Dynamic: dyn, Mapper: mgr.GetRESTMapper(), Store: store, Reverter: reverter{applier},
		Policy: engine, Settings: settings, Audit: auditLog, LabelKey: reconcile.GuardLabel,
		Workers: o.Workers, Stamps: stamps, Log: log.WithName("drift"),
	}
	applier.Live = watcher
	// The default policy compiled into the API server (--admission-mode).
	layer := newCompiledLayer(o, self, mgr.GetClient(), mgr.GetAPIReader(), mgr.GetRESTMapper(), mgr.GetCache(), store, settings, log.WithName("compiled"))
	if err := mgr.Add(layer); err != nil {
		return err
	}
	watcher.APIServerStamps = layer.StampsInForce
	// Custom health rules (data.driftguard.health) live in the policy files.
	engine.OnLoad(func(modules map[string]string) {
		layer.PolicyLoaded(modules)
		he, err := policy.NewHealthEngine(modules, log.WithName("health"))
		switch {
		case errors.Is(err, policy.ErrNoHealthRule):
			watcher.SetCustomHealth(nil)
		case err != nil:
			log.Error(err, "custom health rules not loaded; the built-in rules apply")
			watcher.SetCustomHealth(nil)
		default:
			log.Info("custom health rules loaded", "revision", he.Revision())
			watcher.SetCustomHealth(he)
		}
	})
	healthTracker := &reconcile.HealthTracker{Source: watcher, Live: watcher, Reader: mgr.GetAPIReader(), Identities: identities}
	// The answer to each of the guard's own applies (self-heal's too) goes
	// to the health tracker and to the inventory of what the guard applied,
	// the only objects prune may delete.
	inventory := &reconcile.InventoryStore{Client: mgr.GetClient(), Namespace: o.Namespace, Log: log.WithName("inventory")}
	applier.Applied = func(stored *unstructured.Unstructured) {
		healthTracker.Applied(stored)
		inventory.Applied(stored)
	}
	driftStatus := &reconcile.DriftStatus{Client: mgr.GetClient(), Drift: watcher, Health: healthTracker, Store: store, Log: log.WithName("drift-status")}
	watcher.Changed = driftStatus.Changed
	watcher.HealthChanged = driftStatus.HealthChanged
	healthTracker.Recheck = driftStatus.Recheck
	for _, r := range []manager.Runnable{watcher, driftStatus} {
		if err := mgr.Add(r); err != nil {
			return err
		}
	}
	var webhookRules *webhook.Registrar
	if o.WebhookRegister {
		if webhookRules, err = newRegistrar(cfg, mgr, kube, store, auditLog, o, log); err != nil {
			return err
		}
		if o.AdmissionMode == ModeCompiled {
			// Registered at once, before the policies are removed.
			webhookRules.Leftover = layer.Leftover
			layer.LeftoverChanged = func() {
				if err := webhookRules.Sync(ctx); err != nil {
					webhookRules.Changed() // retried by the registrar
				}
			}
		}
	}
	if o.SelfProtect {
		if err := mgr.Add(&protectionWatch{kube: kube, cache: mgr.GetCache(), namespace: o.Namespace, deployment: o.DeploymentName, shard: o.Shard, audit: auditLog, log: log.WithName("protect")}); err != nil {
			return err
		}
	}
	// What charts see of the cluster (.Capabilities): asked by discovery,
	// kept a minute (docs/rendering.md).
	// Its own client, bounded in time: Get holds every chart's render
	// while it asks.
	discoveryCfg := rest.CopyConfig(cfg)
	discoveryCfg.Timeout = capabilitiesTimeout
	disc, err := discovery.NewDiscoveryClientForConfig(discoveryCfg)
	if err != nil {
		return fmt.Errorf("discovery client: %w", err)
	}
	caps := &reconcile.ClusterCapabilities{Discovery: disc, Log: log.WithName("capabilities")}
	gitFetcher := gitstore.NewFetcher(o.GitCacheDir, log.WithName("git"))
	gitFetcher.SetOptions(o.Sources)
	fetcher := sources.New(gitFetcher, filepath.Join(o.GitCacheDir, "artifacts"), log.WithName("sources"))
	if o.LeaderElection {
		if err := mgr.Add(&follower{client: mgr.GetClient(), cache: mgr.GetCache(), fetcher: fetcher, store: store, applier: applier, caps: caps,
			elected: mgr.Elected(), namespace: o.Namespace, interval: o.DefaultInterval, log: log.WithName("follow")}); err != nil {
			return err
		}
	}
	rec := &reconcile.GuardReconciler{
		Client: mgr.GetClient(), Fetcher: fetcher, Store: store,
		Applier: applier, Inventory: inventory, Audit: auditLog, Drift: watcher, SecretNamespace: o.Namespace,
		DefaultInterval: o.DefaultInterval, Log: log.WithName("reconcile"),
		Health: healthTracker, Events: mgr.GetEventRecorder("driftguard"), Concurrent: o.Concurrent, Shard: o.Shard, Capabilities: caps,
	}
	if webhookRules != nil {
		rec.Protect = webhookRules.Sync
	}
	if o.PolicyGit != "" {
		guard, path, _ := o.PolicyGitSource() // checked by Validate
		rec.Policy = &reconcile.PolicySource{Guard: guard, Path: path, Load: engine.Load}
	}
	healthTracker.OnChange = rec.HealthChanged
	if err := rec.SetupWithManager(mgr); err != nil {
		return fmt.Errorf("set up guard reconciler: %w", err)
	}
	driftStatus.Requeue = rec.Enqueue
	if err := addReceiver(mgr, o, rec.Pushed, log); err != nil {
		return err
	}

	// Admission webhook.
	certs, keeper, err := certificates(ctx, kube, webhookRules, o, log.WithName("certs"))
	if err != nil {
		return err
	}
	serving = certs
	if keeper != nil {
		if err := mgr.Add(keeper); err != nil {
			return err
		}
	}
	validator := &webhook.Validator{
		Store: store, Policy: engine, Settings: settings, Options: applier.Options, WriteOptions: applier.WriteOptions, Mapper: mgr.GetRESTMapper(), Audit: auditLog,
		FailClosed: o.FailurePolicy == "Fail",
		Deadline:   o.WebhookTimeout * 4 / 5, Log: log.WithName("webhook"),
	}
	validator.Init()
	stamper := &webhook.Stamper{Validator: validator, Stamps: stamps}
	server := webhook.NewServer(o.WebhookAddr, tls.Certificate{}, validator, stamper, log.WithName("webhook"))
	server.GetCertificate = certs.GetCertificate
	server.MinVersion, _ = o.tlsMinVersion()
	if server.ClientCAs, err = o.webhookClientCAs(); err != nil {
		return err
	}
	server.ClientNames = o.WebhookClientNames
	// Bodies are bounded before they are read: the in-flight slots and
	// bytes are taken first (the validator's own bound is then not needed).
	server.Limits = webhook.Limits{MaxInFlight: o.MaxInFlight, MaxRequestBytes: o.WebhookMaxRequestBytes,
		MaxBytesInFlight: o.WebhookMaxBytesInFlight, Deadline: o.WebhookTimeout * 4 / 5}
	if err := mgr.Add(server); err != nil {
		return err
	}
	if o.WebhookRegister {
		webhookRules.CA = certs.CABundle
		if err := mgr.Add(registrar(server, webhookRules, o, certs.CABundle(), self, log)); err != nil {
			return err
		}
	}
	if err := mgr.AddHealthzCheck("ping", healthz.Ping); err != nil {
		return err
	}
	if err := mgr.AddReadyzCheck("ping", healthz.Ping); err != nil {
		return err
	}
	log.Info("starting driftguard", "webhook", o.WebhookAddr, "policy", engine.Revision())
	err = mgr.Start(ctx)
	if cerr := auditLog.Close(); cerr != nil {
		log.Error(cerr, "close audit log")
	}
	return err
}

// metricsOptions serves the metrics on --metrics-addr: over HTTPS behind the
// API server's authentication and authorization with --metrics-secure,
// else plain HTTP, which start-up flags when it is not on loopback.
func metricsOptions(o Options, cert func(*tls.ClientHelloInfo) (*tls.Certificate, error), log logr.Logger) metricsserver.Options {
	if !o.MetricsSecure {
		if !metricsOnLoopback(o.MetricsAddr) {
			log.Info("metrics are served over plain HTTP to anyone who reaches --metrics-addr; use --metrics-secure or a loopback address", "addr", o.MetricsAddr)
		}
		return metricsserver.Options{BindAddress: o.MetricsAddr}
	}
	minVersion, _ := o.tlsMinVersion()
	return metricsserver.Options{
		BindAddress: o.MetricsAddr, SecureServing: true, FilterProvider: metricsAuthFilter,
		// HTTP/1.1 only (controller-runtime offers h2): what scrapers speak,
		// and no HTTP/2 stream floods (rapid reset) on an endpoint any pod
		// may reach.
		TLSOpts: []func(*tls.Config){func(c *tls.Config) {
			c.GetCertificate, c.MinVersion, c.NextProtos = cert, minVersion, []string{"http/1.1"}
		}},
	}
}

// leaderElectionID is the lease of one shard's replicas.
func leaderElectionID(shard string) string {
	if shard == "" {
		return "driftguard.driftguard.io"
	}
	return "driftguard-" + shard + ".driftguard.io"
}

// registrar registers the webhook configurations once the server listens,
// and again whenever the kinds in Git change. It runs on the leader only: one
// writer, so that replicas never take turns. The guard's own requests (self)
// are not sent to the webhooks.
func registrar(server *webhook.Server, reg *webhook.Registrar, o Options, ca []byte, self string, log logr.Logger) manager.Runnable {
	return manager.RunnableFunc(func(ctx context.Context) error {
		addr, err := server.BoundAddr(ctx)
		if err != nil {
			return nil
		}
		url := o.WebhookURL
		if url == "" {
			url = "https://" + addr.String()
		}
		registration := webhook.Registration{
			Name: o.WebhookConfigName, URL: url, CABundle: ca,
			FailurePolicy:  admissionregistrationv1.FailurePolicyType(o.FailurePolicy),
			TimeoutSeconds: int32(o.WebhookTimeout / time.Second), LabelKey: reconcile.GuardLabel,
			ExcludeNamespaces: o.excludedNamespaces(), SkipUsers: []string{self},
			// The service accounts Guards act as write what Git says, as the
			// guard does; they are all of its own namespace, whose pods can
			// run as the guard itself anyway.
			SkipUserPrefixes: []string{reconcile.ServiceAccountPrefix(o.Namespace)},
			DecideInMutating: o.AdmissionMode != ModeWebhook,
		}
		if o.WebhookService != "" {
			registration.ServiceNamespace, registration.ServiceName, registration.ServicePort = o.Namespace, o.WebhookService, o.WebhookServicePort
		}
		log.Info("registering webhook", "configuration", o.WebhookConfigName, "url", url)
		return reg.Run(ctx, registration)
	})
}

func webhookHosts(o Options) []string {
	hosts := slices.Clone(o.WebhookHosts)
	if o.WebhookService != "" {
		svc := o.WebhookService + "." + o.Namespace
		hosts = append(hosts, o.WebhookService, svc, svc+".svc", svc+".svc.cluster.local")
	}
	return hosts
}

func whoAmI(ctx context.Context, kube kubernetes.Interface) (string, error) {
	r, err := kube.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
	if err != nil {
		return "", fmt.Errorf("find the guard's own identity (SelfSubjectReview): %w", err)
	}
	return r.Status.UserInfo.Username, nil
}

// nonLeader runs fn on every replica.
type nonLeader func(ctx context.Context) error

func (f nonLeader) Start(ctx context.Context) error { return f(ctx) }
func (f nonLeader) NeedLeaderElection() bool        { return false }

// reverter adapts the Applier to the informer's Reverter: each write acts
// as the identity of the Guard the object belongs to.
type reverter struct{ a *reconcile.Applier }

func (r reverter) Revert(ctx context.Context, guard string, want *gitstore.Object, live *unstructured.Unstructured) error {
	a, err := r.a.ForGuard(ctx, guard)
	if err != nil {
		return err
	}
	_, err = a.Revert(ctx, want, live)
	return err
}

func (r reverter) DryRun(ctx context.Context, guard string, want *gitstore.Object, live *unstructured.Unstructured) error {
	a, err := r.a.ForGuard(ctx, guard)
	if err != nil {
		return err
	}
	return a.DryRun(ctx, want, live)
}

func (r reverter) RemoveAdditions(ctx context.Context, guard string, live *unstructured.Unstructured, added []drift.Change) error {
	if len(added) == 0 {
		return nil
	}
	a, err := r.a.ForGuard(ctx, guard)
	if err != nil {
		return err
	}
	return a.RemoveAdditions(ctx, live, added)
}

func (r reverter) Options(desired *unstructured.Unstructured, live map[string]any) drift.Options {
	return r.a.Options(desired, live)
}

func (r reverter) ClearAnnotations(ctx context.Context, guard string, live *unstructured.Unstructured, keys ...string) error {
	a, err := r.a.ForGuard(ctx, guard)
	if err != nil {
		return err
	}
	return a.ClearAnnotations(ctx, live, keys...)
}

// guardSettings reads per-Guard settings from the manager's cache; ignore
// rules are compiled once per Guard generation.
type guardSettings struct {
	c      client.Client
	global []*drift.Rule // --ignore-file, for every Guard

	mu    sync.Mutex
	rules map[string]perGeneration
	specs map[string]perGeneration
}

type perGeneration struct {
	generation int64
	rules      []*drift.Rule
	spec       map[string]any // the spec as JSON decodes it, for policies
}

// IgnoreRules returns the global ignore rules and the compiled rules of a
// Guard; rules that do not compile are reported by the Guard reconciler and
// left out here.
func (s *guardSettings) IgnoreRules(guard string) []*drift.Rule {
	g, ok := s.guard(guard)
	if !ok || len(g.Spec.Ignore) == 0 {
		return s.global
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if c, ok := s.rules[guard]; ok && c.generation == g.Generation {
		return c.rules
	}
	own, _ := reconcile.CompileIgnoreRules(g.Spec.Ignore)
	rules := append(slices.Clone(s.global), own...)
	if s.rules == nil {
		s.rules = map[string]perGeneration{}
	}
	s.rules[guard] = perGeneration{generation: g.Generation, rules: rules}
	return rules
}

func (s *guardSettings) guard(name string) (*v1alpha1.Guard, bool) {
	// Read-only, on the drift and admission hot paths: skip the cache's copy.
	var g v1alpha1.Guard
	if err := s.c.Get(context.Background(), client.ObjectKey{Name: name}, &g, client.UnsafeDisableDeepCopy); err != nil {
		return nil, false
	}
	return &g, true
}

// SelfHeal is on unless the Guard turns it off or is suspended.
func (s *guardSettings) SelfHeal(guard string) bool {
	g, ok := s.guard(guard)
	return !ok || (g.SelfHealEnabled() && !g.Spec.Suspend)
}

// Enforcement is the Guard's mode, deny when unset.
func (s *guardSettings) Enforcement(guard string) string {
	if g, ok := s.guard(guard); ok && g.Spec.Enforcement != "" {
		return string(g.Spec.Enforcement)
	}
	return string(v1alpha1.EnforcementDeny)
}

// GuardSpec is the Guard's spec as JSON decodes it, made once per
// generation; policies see it as input.guardSpec and must not change it.
func (s *guardSettings) GuardSpec(guard string) map[string]any {
	g, ok := s.guard(guard)
	if !ok {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if c, ok := s.specs[guard]; ok && c.generation == g.Generation {
		return c.spec
	}
	var spec map[string]any
	if b, err := json.Marshal(g.Spec); err == nil {
		_ = json.Unmarshal(b, &spec) // the JSON the API server served
	}
	if s.specs == nil {
		s.specs = map[string]perGeneration{}
	}
	s.specs[guard] = perGeneration{generation: g.Generation, spec: spec}
	return spec
}

// PolicyData is the Guard's spec.policyData.
func (s *guardSettings) PolicyData(guard string) map[string]string {
	if g, ok := s.guard(guard); ok {
		return g.Spec.PolicyData
	}
	return nil
}

// BreakGlassTTL is how long a break-glass change is kept, 1h when unset.
func (s *guardSettings) BreakGlassTTL(guard string) time.Duration {
	if g, ok := s.guard(guard); ok && g.Spec.BreakGlassTTL != nil && g.Spec.BreakGlassTTL.Duration > 0 {
		return g.Spec.BreakGlassTTL.Duration
	}
	return time.Hour
}

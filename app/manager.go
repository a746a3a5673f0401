package app

import (
	"crypto/tls"
	"fmt"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/selection"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrlconfig "sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/driftguard/driftguard/api/v1alpha1"
	"github.com/driftguard/driftguard/apply"
	"github.com/driftguard/driftguard/definitions"
)

// managedSelector selects objects carrying the inventory label.
var managedSelector = func() labels.Selector {
	req, err := labels.NewRequirement(apply.GuardLabel, selection.Exists, nil)
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

// newManager is the one manager every component runs in. Its metrics are
// served with the webhook's certificate under --metrics-secure.
func newManager(cfg *rest.Config, o Options, serving servingCerts, log logr.Logger) (manager.Manager, error) {
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:                  Scheme(),
		Logger:                  log,
		Metrics:                 metricsOptions(o, serving.GetCertificate, log),
		HealthProbeBindAddress:  o.HealthAddr,
		PprofBindAddress:        o.PprofAddr,
		LeaderElection:          o.LeaderElection,
		LeaderElectionID:        leaderElectionID(o.Shard),
		LeaderElectionNamespace: o.Namespace,
		LeaseDuration:           &o.LeaseDuration,
		RenewDeadline:           &o.RenewDeadline,
		RetryPeriod:             &o.RetryPeriod,
		Client:                  client.Options{Cache: &client.CacheOptions{DisableFor: []client.Object{&corev1.Secret{}, &corev1.ConfigMap{}}}},
		Cache:                   cacheOptions(o),
		// Resettable: package definitions resets it when a
		// CustomResourceDefinition changes.
		MapperProvider: definitions.NewMapper,
		// A replica that stops gives up the lease at once: the next one
		// takes over without waiting for it to expire.
		LeaderElectionReleaseOnCancel: true,
		// Run may run more than once in a process (tests): controller names
		// need not be unique.
		Controller: ctrlconfig.Controller{SkipNameValidation: &skipNameValidation},
	})
	if err != nil {
		return nil, fmt.Errorf("create manager: %w", err)
	}
	return mgr, nil
}

// cacheOptions: the manager's cache holds Guards and, for prune, the
// metadata of managed objects only: never every object of a kind in the
// cluster.
func cacheOptions(o Options) cache.Options {
	return cache.Options{
		DefaultLabelSelector: managedSelector,
		ByObject: map[client.Object]cache.ByObject{
			&v1alpha1.Guard{}: {Label: labels.Everything()},
			// The service accounts Guards act as (spec.serviceAccountName),
			// of the guard's own namespace only; watched only once a
			// Guard names one.
			&corev1.ServiceAccount{}: {Label: labels.Everything(), Namespaces: map[string]cache.Config{o.Namespace: {}}},
		},
	}
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

// addAll adds runnables to the manager, in order.
func addAll(mgr manager.Manager, rs ...manager.Runnable) error {
	for _, r := range rs {
		if err := mgr.Add(r); err != nil {
			return err
		}
	}
	return nil
}

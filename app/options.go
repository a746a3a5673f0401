package app

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/driftguard/driftguard/audit"
	"github.com/driftguard/driftguard/render"
	"github.com/driftguard/driftguard/source"
)

// maxAuditDrainTimeout keeps --audit-drain-timeout well inside the 30 s
// Kubernetes gives a pod between SIGTERM and SIGKILL, with room for the
// rest of the shutdown.
const maxAuditDrainTimeout = 20 * time.Second

// Options are the process-level settings of the guard. Every field has a flag.
type Options struct {
	MetricsAddr     string
	PprofAddr       string
	HealthAddr      string
	LeaderElection  bool
	Namespace       string
	GitCacheDir     string
	DefaultInterval time.Duration
	Workers         int
	// NotifySecret names Secrets in Namespace (separated by commas), each a
	// notification provider: key "provider" (generic, slack, teams, github,
	// gitlab; default generic) and its keys (docs/reconciliation.md).
	NotifySecret string
	// NotifyPeriod: at most one notification of a kind per Guard in it.
	NotifyPeriod time.Duration
	// Concurrent is how many Guards are reconciled at once.
	Concurrent int
	// ApplyConcurrency is how many objects of a Guard are applied at once.
	ApplyConcurrency int
	// KubeAPIQPS and KubeAPIBurst bound the guard's own requests to the API
	// server (client-go's token bucket); API Priority and Fairness on the
	// server shares it among clients.
	KubeAPIQPS   float32
	KubeAPIBurst int
	// Shard limits this process to Guards labelled driftguard.io/shard=Shard
	// (empty: Guards without the label).
	Shard string
	// DefaultServiceAccount is the service account, in Namespace, whose
	// rights the writes of a Guard without spec.serviceAccountName use
	// (impersonated); empty: the guard's own identity.
	DefaultServiceAccount string

	WebhookAddr        string
	WebhookURL         string
	WebhookService     string
	WebhookServicePort int32
	WebhookHosts       []string
	CertDir            string
	WebhookRegister    bool
	WebhookConfigName  string
	FailurePolicy      string
	// AdmissionMode is webhook, both or compiled (ModeWebhook, ModeBoth,
	// ModeCompiled).
	AdmissionMode     string
	WebhookTimeout    time.Duration
	MaxInFlight       int
	ExcludeNamespaces []string

	IgnoreFile string

	ReceiverAddr  string
	ReceiverToken string
	// ReceiverAllowUnauthenticated lets the receiver accept pushes while
	// it has no token; without it, a receiver without a token refuses
	// every push.
	ReceiverAllowUnauthenticated bool

	PolicyDir     string
	PolicyTimeout time.Duration
	// PolicyGit is GUARD:PATH: the policy is the Rego files below PATH in
	// the repository of Guard GUARD, at the revision it has in force.
	PolicyGit        string
	GuardUsers       []string
	BreakGlassGroups []string

	AuditStdout      bool
	AuditFile        string
	AuditFileMaxMB   int
	AuditFileBackups int
	AuditEvents      bool
	AuditQueueSize   int
	// AuditDrainTimeout bounds how long, at shutdown, the Event and
	// notification sinks go on sending what they buffered
	// (--audit-drain-timeout; docs/audit.md).
	AuditDrainTimeout time.Duration
	// OTLP audit sink (--audit-otlp-*; app/options_otlp.go).
	OTLPOptions

	// RenderLimits bound what rendering one revision may read, decode and
	// produce (--render-* flags; docs/security.md, "Rendering limits").
	RenderLimits render.Limits
	// Sources say what fetching a source may reach and download
	// (--allow-local-sources, --source-* flags; docs/security.md, "Fetch
	// limits" and "Local sources").
	Sources source.FetchOptions

	// Installation in a cluster: self-protection, certificates, HA
	// (app/options_install.go).
	InstallOptions
	// Who may call the webhook, what it reads, how metrics are served
	// (app/options_endpoint.go).
	EndpointOptions
}

// DefaultOptions returns the settings used when no flag is given.
func DefaultOptions() Options {
	cache, err := os.UserCacheDir()
	if err != nil {
		cache = os.TempDir()
	}
	ns := os.Getenv("POD_NAMESPACE")
	if ns == "" {
		ns = "driftguard-system"
	}
	return Options{
		MetricsAddr:       "127.0.0.1:8080",
		HealthAddr:        "127.0.0.1:8081",
		Namespace:         ns,
		GitCacheDir:       filepath.Join(cache, "driftguard", "git"),
		DefaultInterval:   time.Minute,
		Workers:           4,
		Concurrent:        4,
		ApplyConcurrency:  16,
		KubeAPIQPS:        1000,
		KubeAPIBurst:      2000,
		NotifyPeriod:      time.Minute,
		WebhookAddr:       "127.0.0.1:9443",
		WebhookHosts:      []string{"127.0.0.1", "localhost"},
		WebhookRegister:   true,
		WebhookConfigName: "driftguard",
		FailurePolicy:     "Ignore",
		AdmissionMode:     ModeWebhook,
		WebhookTimeout:    5 * time.Second,
		MaxInFlight:       256,
		ExcludeNamespaces: []string{"kube-system"},
		AuditStdout:       true,
		AuditFileMaxMB:    100,
		AuditFileBackups:  5,
		AuditEvents:       true,
		AuditQueueSize:    4096,
		AuditDrainTimeout: audit.DefaultAsyncDrain,
		OTLPOptions:       defaultOTLPOptions(),
		PolicyTimeout:     time.Second,
		ReceiverToken:     os.Getenv("DRIFTGUARD_RECEIVER_TOKEN"),
		RenderLimits:      render.DefaultLimits(),
		Sources:           source.DefaultFetchOptions(),
		InstallOptions:    defaultInstallOptions(),
		EndpointOptions:   defaultEndpointOptions(),
	}
}

// BindFlags registers a flag for every option.
func (o *Options) BindFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.MetricsAddr, "metrics-addr", o.MetricsAddr, "address of the Prometheus metrics endpoint (0 disables)")
	fs.StringVar(&o.PprofAddr, "pprof-addr", o.PprofAddr, "address of Go's /debug/pprof endpoints, for profiling (empty disables; keep it on loopback)")
	fs.StringVar(&o.HealthAddr, "health-addr", o.HealthAddr, "address of the /healthz and /readyz probes (0 disables)")
	fs.BoolVar(&o.LeaderElection, "leader-elect", o.LeaderElection, "elect one leader among replicas to apply and revert (all replicas serve the webhook)")
	fs.StringVar(&o.Namespace, "namespace", o.Namespace, "the guard's own namespace: Git credentials, leader lease; never guarded (env POD_NAMESPACE)")
	fs.StringVar(&o.GitCacheDir, "git-cache-dir", o.GitCacheDir, "where fetched repositories (and, below artifacts/, chart archives and OCI layers) are cached")
	fs.DurationVar(&o.DefaultInterval, "default-interval", o.DefaultInterval, "full reconcile interval for Guards that set none")
	fs.IntVar(&o.Workers, "drift-workers", o.Workers, "workers comparing and reverting drift in parallel")
	fs.IntVar(&o.Concurrent, "concurrent", o.Concurrent, "Guards reconciled at once")
	fs.IntVar(&o.ApplyConcurrency, "apply-concurrency", o.ApplyConcurrency, "objects of one Guard applied at once")
	fs.Float32Var(&o.KubeAPIQPS, "kube-api-qps", o.KubeAPIQPS, "requests per second the guard sends to the API server at most, on average (the API server's priority and fairness shares it among clients)")
	fs.IntVar(&o.KubeAPIBurst, "kube-api-burst", o.KubeAPIBurst, "requests the guard may send at once above --kube-api-qps")
	fs.StringVar(&o.NotifySecret, "notify-secret", o.NotifySecret, "Secrets (in --namespace, separated by commas), each a notification provider: key \"provider\" generic (default: JSON POST to key \"address\", signed with key \"hmacKey\" when set), slack, teams (sync failures, Degraded Guards, drift), github or gitlab (a commit status for each revision applied or failed, with key \"token\")")
	fs.DurationVar(&o.NotifyPeriod, "notify-period", o.NotifyPeriod, "at most one notification of a kind per Guard in this period; the next one counts those held back")
	fs.StringVar(&o.Shard, "shard", o.Shard, "reconcile only Guards labelled driftguard.io/shard=NAME (empty: only Guards without that label)")
	fs.StringVar(&o.DefaultServiceAccount, "default-service-account", o.DefaultServiceAccount, "service account in --namespace whose rights a Guard without spec.serviceAccountName applies, prunes and self-heals with (impersonated); empty: the guard's own identity. Platform teams should set it")

	fs.StringVar(&o.WebhookAddr, "webhook-addr", o.WebhookAddr, "address the admission webhook listens on (TLS)")
	fs.StringVar(&o.WebhookURL, "webhook-url", o.WebhookURL, "URL the API server calls when the guard runs outside the cluster (default https://<webhook-addr>)")
	fs.StringVar(&o.WebhookService, "webhook-service", o.WebhookService, "Service (in --namespace) the API server calls when the guard runs in the cluster; overrides --webhook-url")
	fs.Int32Var(&o.WebhookServicePort, "webhook-service-port", 443, "port of --webhook-service")
	fs.StringSliceVar(&o.WebhookHosts, "webhook-hosts", o.WebhookHosts, "host names and IPs of the generated serving certificate")
	fs.StringVar(&o.CertDir, "cert-dir", o.CertDir, "folder with tls.crt, tls.key and ca.crt for the webhook (shared by replicas); empty generates a self-signed pair at start-up")
	fs.BoolVar(&o.WebhookRegister, "webhook-register", o.WebhookRegister, "create or update the ValidatingWebhookConfiguration at start-up with the generated CA")
	fs.StringVar(&o.WebhookConfigName, "webhook-config-name", o.WebhookConfigName, "name of the ValidatingWebhookConfiguration")
	fs.StringVar(&o.AdmissionMode, "admission-mode", o.AdmissionMode, "webhook: the guard's webhooks decide; both: the default policy is also compiled into ValidatingAdmissionPolicies the API server enforces while the guard is down; compiled: the API server's policies alone decide what they can, the webhooks only creates and what the policies leave to them (docs/policy.md)")
	fs.StringVar(&o.FailurePolicy, "failure-policy", o.FailurePolicy, "Fail or Ignore: what the API server and the guard do with a change the guard cannot decide")
	fs.DurationVar(&o.WebhookTimeout, "webhook-timeout", o.WebhookTimeout, "how long the API server waits for the webhook (1s to 30s); the guard answers before")
	fs.IntVar(&o.MaxInFlight, "webhook-max-in-flight", o.MaxInFlight, "admission reviews decided at once; more wait until the deadline")
	fs.StringSliceVar(&o.ExcludeNamespaces, "exclude-namespaces", o.ExcludeNamespaces, "namespaces whose objects the webhook never sees (the guard's own is always added)")

	fs.StringVar(&o.IgnoreFile, "ignore-file", o.IgnoreFile, "YAML list of ignore rules (as in a Guard's spec.ignore) that apply to every Guard, e.g. replicas owned by HPAs")
	fs.StringVar(&o.ReceiverAddr, "receiver-addr", o.ReceiverAddr, "address of the Git push receiver (POST /hook from GitHub, GitLab, Gitea or a script reconciles that repository's Guards at once); empty disables it")
	fs.StringVar(&o.ReceiverToken, "receiver-token", o.ReceiverToken, "shared secret push notifications must carry (X-Driftguard-Token, X-Gitlab-Token, or GitHub's X-Hub-Signature-256); env DRIFTGUARD_RECEIVER_TOKEN. Without it the receiver refuses every push")
	fs.BoolVar(&o.ReceiverAllowUnauthenticated, "receiver-allow-unauthenticated", o.ReceiverAllowUnauthenticated, "let the push receiver accept pushes without a token (anyone who reaches it can make Guards fetch early); without this and a token it refuses every push")
	fs.StringVar(&o.PolicyDir, "policy-dir", o.PolicyDir, "folder of Rego files (package driftguard) to use instead of the built-in policy; reloaded on change")
	fs.StringVar(&o.PolicyGit, "policy-git", o.PolicyGit, "GUARD:PATH: take the policy from the Rego files below PATH in Guard GUARD's repository, at the revision that Guard has in force (instead of --policy-dir)")
	fs.DurationVar(&o.PolicyTimeout, "policy-timeout", o.PolicyTimeout, "bound of one policy evaluation (an admission review is also bounded by 80% of --webhook-timeout); a policy that takes longer is a policy error: the webhook applies --failure-policy, the drift watcher reverts")
	fs.StringSliceVar(&o.GuardUsers, "guard-users", o.GuardUsers, "extra identities always allowed (the guard's own identity is found at start-up)")
	fs.StringSliceVar(&o.BreakGlassGroups, "break-glass-groups", o.BreakGlassGroups, "groups whose members may change managed objects with a driftguard.io/break-glass annotation")

	fs.BoolVar(&o.AuditStdout, "audit-stdout", o.AuditStdout, "write audit records as JSON lines to stdout")
	fs.StringVar(&o.AuditFile, "audit-file", o.AuditFile, "also write audit records to this rotating file")
	fs.IntVar(&o.AuditFileMaxMB, "audit-file-max-size-mb", o.AuditFileMaxMB, "rotate the audit file at this size")
	fs.IntVar(&o.AuditFileBackups, "audit-file-max-backups", o.AuditFileBackups, "rotated audit files kept")
	fs.BoolVar(&o.AuditEvents, "audit-events", o.AuditEvents, "also record drift and decisions as Kubernetes Events on the object")
	fs.IntVar(&o.AuditQueueSize, "audit-queue-size", o.AuditQueueSize, "audit records buffered before writers wait (none is dropped)")
	fs.DurationVar(&o.AuditDrainTimeout, "audit-drain-timeout", o.AuditDrainTimeout, "at shutdown, how long the Event, notification and OTLP sinks may go on sending what they buffered; the rest is counted and logged as not sent (stdout and the file always get every record)")
	o.OTLPOptions.bindFlags(fs)
	o.RenderLimits.BindFlags(fs)
	o.Sources.BindFlags(fs)
	o.InstallOptions.bindFlags(fs)
	o.EndpointOptions.bindFlags(fs)
}

// PolicyGitSource splits --policy-git into the Guard and the path.
func (o *Options) PolicyGitSource() (guard, path string, err error) {
	guard, path, ok := strings.Cut(o.PolicyGit, ":")
	if !ok || guard == "" || path == "" {
		return "", "", fmt.Errorf("--policy-git %q: want GUARD:PATH, e.g. platform:policies", o.PolicyGit)
	}
	return guard, path, nil
}

// excludedNamespaces are the namespaces neither the webhooks nor the
// compiled policies ever see: --exclude-namespaces and the guard's own.
func (o Options) excludedNamespaces() []string {
	if slices.Contains(o.ExcludeNamespaces, o.Namespace) {
		return o.ExcludeNamespaces
	}
	return append(slices.Clone(o.ExcludeNamespaces), o.Namespace)
}

// Validate checks option values, naming the flag at fault.
func (o *Options) Validate() error {
	if !slices.Contains([]string{ModeWebhook, ModeBoth, ModeCompiled}, o.AdmissionMode) {
		return fmt.Errorf("--admission-mode: %q is none of %s, %s, %s", o.AdmissionMode, ModeWebhook, ModeBoth, ModeCompiled)
	}
	if o.FailurePolicy != "Fail" && o.FailurePolicy != "Ignore" {
		return fmt.Errorf("--failure-policy: %q is neither Fail nor Ignore", o.FailurePolicy)
	}
	if o.WebhookTimeout < time.Second || o.WebhookTimeout > 30*time.Second {
		return fmt.Errorf("--webhook-timeout: %s is outside 1s..30s", o.WebhookTimeout)
	}
	if o.PolicyTimeout <= 0 {
		return fmt.Errorf("--policy-timeout: must be above 0, got %s", o.PolicyTimeout)
	}
	if o.PolicyGit != "" {
		if o.PolicyDir != "" {
			return fmt.Errorf("--policy-git and --policy-dir exclude each other")
		}
		if _, _, err := o.PolicyGitSource(); err != nil {
			return err
		}
	}
	if o.Concurrent < 1 {
		return fmt.Errorf("--concurrent: must be at least 1, got %d", o.Concurrent)
	}
	if o.ApplyConcurrency < 1 {
		return fmt.Errorf("--apply-concurrency: must be at least 1, got %d", o.ApplyConcurrency)
	}
	if o.KubeAPIQPS <= 0 || o.KubeAPIBurst < 1 {
		return fmt.Errorf("--kube-api-qps and --kube-api-burst: must be above 0, got %g and %d", o.KubeAPIQPS, o.KubeAPIBurst)
	}
	if o.Workers < 1 {
		return fmt.Errorf("--drift-workers: must be at least 1, got %d", o.Workers)
	}
	if o.CertDir != "" && o.CertSecret != "" {
		return fmt.Errorf("--cert-dir and --cert-secret: give one, not both")
	}
	if o.DefaultServiceAccount != "" {
		if errs := validation.IsDNS1123Subdomain(o.DefaultServiceAccount); len(errs) > 0 {
			return fmt.Errorf("--default-service-account %q: not a service account name: %s", o.DefaultServiceAccount, strings.Join(errs, "; "))
		}
	}
	if o.AuditQueueSize < 1 {
		return fmt.Errorf("--audit-queue-size: must be at least 1, got %d", o.AuditQueueSize)
	}
	if o.AuditDrainTimeout < 0 || o.AuditDrainTimeout > maxAuditDrainTimeout {
		return fmt.Errorf("--audit-drain-timeout: must be between 0 and %s (inside the 30 s Kubernetes waits after SIGTERM), got %s", maxAuditDrainTimeout, o.AuditDrainTimeout)
	}
	if err := o.OTLPOptions.validate(); err != nil {
		return err
	}
	if err := o.RenderLimits.Validate(); err != nil {
		return err
	}
	if err := o.Sources.Validate(); err != nil {
		return err
	}
	if err := o.EndpointOptions.validate(); err != nil {
		return err
	}
	return o.InstallOptions.validate()
}

// Package harness runs the guard for end-to-end tests: a real control plane
// (devenv), a real Git server on loopback, and the guard itself in-process,
// with helpers to drive changes as a person would (kubectl) and to wait for
// audit records.
package harness

import (
	"context"
	"crypto/rand"
	"fmt"
	"maps"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/driftguard/driftguard/app"
	"github.com/driftguard/driftguard/redact"
	"github.com/driftguard/driftguard/test/wait"
)

// Harness is one running control plane, Git server and guard: an Env (its
// Cluster, Git, Admin, AliceKubeconfig, Dir) with the guard running on it.
type Harness struct {
	*Env
	// GuardConfig is the guard's own identity, its requests counted (APICalls).
	GuardConfig *rest.Config
	// Audit collects every audit record the guard writes to stdout.
	Audit *Records
	// AuditFile is where the file sink writes.
	AuditFile string
	// ReceiverURL is the guard's Git push receiver; pushes must carry
	// ReceiverToken (X-Driftguard-Token).
	ReceiverURL   string
	ReceiverToken string
	// WebhookConfigName names the guard's webhook configurations.
	WebhookConfigName string

	cancel context.CancelFunc
	done   chan error

	apiCalls counter // requests the guard makes to the API server, watches aside
	gitCalls counter // requests to the Git server
	gitFront string  // host:port of the counting front of the Git server
}

// counter counts requests by "METHOD path".
type counter struct {
	mu sync.Mutex
	n  map[string]int
}

func (c *counter) add(key string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.n == nil {
		c.n = map[string]int{}
	}
	c.n[key]++
}

// Snapshot returns a copy of the counts.
func (c *counter) Snapshot() map[string]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return maps.Clone(c.n)
}

// APICalls counts the guard's requests to the API server (watches aside).
func (h *Harness) APICalls() map[string]int { return h.apiCalls.Snapshot() }

// GitCalls counts requests to the Git server.
func (h *Harness) GitCalls() map[string]int { return h.gitCalls.Snapshot() }

type countingTransport struct {
	next http.RoundTripper
	c    *counter
}

func (t countingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.URL.Query().Get("watch") != "true" {
		t.c.add(r.Method + " " + r.URL.Path)
	}
	return t.next.RoundTrip(r)
}

// Options tune a harness.
type Options struct {
	Simulated bool
	// Guard adjusts the guard's options before it starts.
	Guard func(*app.Options)
	// APIServerFlags are more kube-apiserver flags (devenv.Options).
	APIServerFlags map[string]string
}

// Start brings everything up; call Stop when done (typically in TestMain).
func Start(o Options) (*Harness, error) {
	dir, err := os.MkdirTemp("", "driftguard-e2e-")
	if err != nil {
		return nil, err
	}
	h := &Harness{Audit: &Records{}, AuditFile: filepath.Join(dir, "audit.log")}
	// As driftguard run does (cmd/driftguard), the process log is scrubbed
	// of the secret values the guard knows (redact.Secrets).
	log := zap.New(zap.UseDevMode(false), zap.WriteTo(redact.Secrets.Writer(logWriter(dir))))
	h.Env, err = StartEnv(EnvOptions{Dir: dir, Simulated: o.Simulated, APIServerFlags: o.APIServerFlags, Log: log})
	if err == nil {
		err = h.start(o, log)
	}
	if err != nil {
		h.Stop()
		return nil, err
	}
	return h, nil
}

// start runs the guard on the Env, as the driftguard user, its API and
// Git requests counted.
func (h *Harness) start(o Options, log logr.Logger) error {
	ctx, cancel := context.WithCancel(context.Background())
	h.cancel = cancel
	h.GuardConfig = rest.CopyConfig(h.GuardRESTConfig)
	h.GuardConfig.Wrap(func(rt http.RoundTripper) http.RoundTripper { return countingTransport{next: rt, c: &h.apiCalls} })
	front, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	h.gitFront = front.Addr().String()
	gitHandler := h.Git.Handler()
	go func() {
		_ = http.Serve(front, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			h.gitCalls.add(r.Method + " " + r.URL.Path)
			gitHandler.ServeHTTP(w, r)
		}))
	}()
	opts := app.DefaultOptions()
	opts.WebhookAddr = "127.0.0.1:0"
	opts.MetricsAddr, opts.HealthAddr = "0", "0"
	opts.GitCacheDir = filepath.Join(h.Dir, "gitcache")
	opts.AuditFile = h.AuditFile
	opts.DefaultInterval = 5 * time.Second
	opts.WebhookConfigName = "driftguard-" + filepath.Base(h.Dir)
	h.WebhookConfigName = opts.WebhookConfigName
	port, err := FreePort()
	if err != nil {
		return err
	}
	opts.ReceiverAddr = fmt.Sprintf("127.0.0.1:%d", port)
	h.ReceiverURL = "http://" + opts.ReceiverAddr + "/hook"
	opts.ReceiverToken = RandomToken()
	h.ReceiverToken = opts.ReceiverToken
	if o.Guard != nil {
		o.Guard(&opts)
	}
	h.done = make(chan error, 1)
	go func() { h.done <- app.Run(ctx, h.GuardConfig, opts, log, h.Audit) }()
	if opts.WebhookRegister {
		return h.waitWebhook(ctx, opts.WebhookConfigName)
	}
	return nil
}

// waitWebhook waits until the guard registered its webhook configuration.
func (h *Harness) waitWebhook(ctx context.Context, name string) error {
	err := wait.Until(60*time.Second, func() error {
		select {
		case err := <-h.done:
			h.done <- err // Stop waits for it too
			return wait.Stop(fmt.Errorf("guard stopped before registering its webhook: %w", err))
		default:
		}
		_, _, err := h.Cluster.Kubectl(ctx, h.Cluster.AdminKubeconfig, "get", "validatingwebhookconfiguration", name)
		return err
	})
	if err != nil {
		return fmt.Errorf("webhook configuration %s not registered within 60s (see %s): %w", name, filepath.Join(h.Dir, "guard.log"), err)
	}
	return nil
}

// Stop stops the guard, the Git server and the cluster.
func (h *Harness) Stop() {
	if h.cancel != nil {
		h.cancel()
	}
	if h.done != nil {
		select {
		case <-h.done:
		case <-time.After(20 * time.Second):
		}
	}
	if h.Env == nil {
		return
	}
	h.Env.Stop()
	if os.Getenv("DRIFTGUARD_KEEP_E2E") == "" {
		_ = os.RemoveAll(h.Dir)
	}
}

// Kubectl runs kubectl as alice and returns its combined output.
func (h *Harness) Kubectl(t testing.TB, args ...string) (string, error) {
	t.Helper()
	return h.KubectlAs(t, h.AliceKubeconfig, args...)
}

// KubectlAs runs kubectl with a kubeconfig and returns its combined output.
func (h *Harness) KubectlAs(t testing.TB, kubeconfig string, args ...string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	out, errOut, err := h.Cluster.Kubectl(ctx, kubeconfig, args...)
	return strings.TrimSpace(out + errOut), err
}

// RandomToken returns a fresh secret, e.g. for the push receiver.
func RandomToken() string {
	return rand.Text()
}

// FreePort returns a TCP port free on 127.0.0.1 right now.
func FreePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

func logWriter(dir string) *os.File {
	f, err := os.Create(filepath.Join(dir, "guard.log"))
	if err != nil {
		return os.Stderr
	}
	return f
}

// LogContains reports whether the guard's log holds substr.
func (h *Harness) LogContains(substr string) error {
	b, err := os.ReadFile(filepath.Join(h.Dir, "guard.log"))
	if err != nil {
		return err
	}
	if !strings.Contains(string(b), substr) {
		return fmt.Errorf("guard log has no %q", substr)
	}
	return nil
}

// Package bench holds driftguard's performance benchmarks. They report
// figures (a `bench:` line per figure against its target, b.ReportMetric and
// a printed table) and never assert on timings.
//
// The end-to-end benchmarks start a real kube-apiserver and etcd (devenv), a
// Git server on loopback and the guard as a process of its own (`driftguard
// run`, built from this tree), lazily, from inside the benchmark: `go test
// ./...` compiles this package and runs nothing. `make bench` runs them all
// (test/bench/cmd/benchrun); one of them:
//
//	KUBEBUILDER_ASSETS=$(tools/build.sh --print) go test -run '^$' -bench 'BenchmarkSelfHeal$' -benchtime 1x ./test/bench/
//
// docs/performance.md describes what each one measures.
package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/driftguard/driftguard/api/v1alpha1"
	"github.com/driftguard/driftguard/audit"
	"github.com/driftguard/driftguard/devenv"
	"github.com/driftguard/driftguard/gitserver"
	"github.com/driftguard/driftguard/test/bench/report"
	"github.com/driftguard/driftguard/test/harness"
	"github.com/driftguard/driftguard/test/wait"
)

// TestMain only stops the environment a benchmark left running; it starts
// nothing, so a plain `go test` of this package costs nothing.
func TestMain(m *testing.M) {
	code := m.Run()
	stopCurrent()
	os.Exit(code)
}

// quick runs the smaller version of every benchmark (make bench-quick).
var quick = flag.Bool("quick", false, "run the smaller version of every benchmark (make bench-quick): fewer objects and edits, same figures")

// figure prints f's line, where `make bench` shows it, and appends it to
// $DRIFTGUARD_BENCH_RESULTS for the summary and bench/results.json.
func figure(b *testing.B, f report.Figure) {
	b.Helper()
	f.Benchmark = b.Name()
	fmt.Println(f.Line())
	if path := os.Getenv("DRIFTGUARD_BENCH_RESULTS"); path != "" {
		if err := report.AppendFigure(path, f); err != nil {
			b.Error(err)
		}
	}
}

// env is one control plane, Git server and guard process. Every audit record
// the guard writes to stdout is stamped with the time it reaches this
// process, so latency is measured on this process's clock as records arrive.
type env struct {
	base    *harness.Env // the control plane, Git server and clients below
	name    string
	dir     string
	cluster *devenv.Cluster
	git     *gitserver.Server
	admin   client.Client
	kube    kubernetes.Interface // admin, typed, high QPS
	guard   *harness.Process
	audit   *stampedRecords

	auditEvents bool   // the Event sink is on
	webhookName string // of the guard's webhook configurations

	// Cold start: the guard process started → a Guard of coldObjects
	// ConfigMaps, created before it, Ready.
	coldStart time.Duration

	onStop []func() // run first by stop

	// The webhook configurations as the guard registered them, without
	// server-set fields, to re-create them after setAdmission deleted them.
	vwc *admissionregistrationv1.ValidatingWebhookConfiguration
	mwc *admissionregistrationv1.MutatingWebhookConfiguration
}

var (
	envMu   sync.Mutex
	current *env
	stopped bool
)

// guardEnv returns the process's environment, starting it on first use: a
// control plane, a Git server and one guard process (`driftguard run`, built
// from this tree) with its webhook registered. Benchmarks that need the
// webhook off delete the configurations (setAdmission); the registrar is the
// only thing --webhook-register switches, so the API server cannot tell the
// two apart.
func guardEnv(b *testing.B) *env {
	b.Helper()
	envMu.Lock()
	defer envMu.Unlock()
	if current != nil {
		return current
	}
	if stopped {
		b.Skip("the environment of this process was stopped; run this benchmark in a process of its own")
	}
	if missing := devenv.MissingBinaries("", false); len(missing) > 0 {
		b.Skipf("control-plane binaries missing in %s: %v (run tools/build.sh, set KUBEBUILDER_ASSETS)", devenv.DefaultBinDir(), missing)
	}
	began := time.Now()
	e, err := startEnv("guard")
	if err != nil {
		b.Fatalf("start environment: %v", err)
	}
	b.Logf("control plane, Git server and guard up in %s (logs in %s)", time.Since(began).Round(time.Millisecond), e.dir)
	current = e
	return e
}

// benchUser is an identity the default policy allows (--guard-users).
const benchUser = "bench-user"

// coldObjects is the size of the Guard the guard finds when it starts.
const coldObjects = 100

func stopCurrent() {
	envMu.Lock()
	defer envMu.Unlock()
	if current != nil {
		current.stop()
		current = nil
		stopped = true
	}
}

func startEnv(name string) (*env, error) {
	dir, err := os.MkdirTemp("", "driftguard-bench-"+name+"-")
	if err != nil {
		return nil, err
	}
	e := &env{name: name, dir: dir, audit: newStampedRecords(), auditEvents: true, webhookName: "driftguard-bench-" + name}
	if err := e.start(); err != nil {
		e.stop()
		return nil, err
	}
	return e, nil
}

func (e *env) start() error {
	var err error
	e.base, err = harness.StartEnv(harness.EnvOptions{Dir: e.dir, QPS: 5000})
	if err != nil {
		return err
	}
	e.cluster, e.git, e.admin, e.kube = e.base.Cluster, e.base.Git, e.base.Admin, e.base.Kube
	guardKC := e.base.GuardKubeconfig
	// DRIFTGUARD_BENCH_AUDIT_EVENTS=false measures without the Event sink.
	if v := os.Getenv("DRIFTGUARD_BENCH_AUDIT_EVENTS"); v != "" {
		if e.auditEvents, err = strconv.ParseBool(v); err != nil {
			return fmt.Errorf("DRIFTGUARD_BENCH_AUDIT_EVENTS: %w", err)
		}
	}
	// The Guard the guard finds when it starts (cold start).
	coldRev, err := e.createConfigMapGuard("bench-cold", "bench-cold", coldObjects, true)
	if err != nil {
		return err
	}
	if e.guard, err = harness.StartProcess(harness.ProcessOptions{
		Kubeconfig: guardKC, Dir: filepath.Join(e.dir, "guard"), WebhookConfigName: e.webhookName, Stdout: e.audit,
		// Without self-protection: setAdmission deletes the configurations to measure without them.
		Args: []string{"--guard-users", benchUser, "--audit-events=" + strconv.FormatBool(e.auditEvents), "--self-protect=false"},
	}); err != nil {
		return err
	}
	if err := e.waitGuard(context.Background(), "bench-cold", coldRev, coldObjects, 2*time.Minute, 10*time.Millisecond); err != nil {
		return err
	}
	e.coldStart = time.Since(e.guard.Started)
	if err := e.waitWebhook(context.Background()); err != nil {
		return err
	}
	return e.saveWebhooks(context.Background())
}

// alive returns an error when the guard process has exited.
func (e *env) alive() error {
	if done, err := e.guard.Exited(); done {
		return err
	}
	return nil
}

func (e *env) waitWebhook(ctx context.Context) error {
	err := wait.Until(60*time.Second, func() error {
		if err := e.alive(); err != nil {
			return wait.Stop(err)
		}
		_, err := e.kube.AdmissionregistrationV1().ValidatingWebhookConfigurations().Get(ctx, e.webhookName, metav1.GetOptions{})
		return err
	})
	if err != nil {
		return fmt.Errorf("webhook configuration %s not registered within 60s: %w", e.webhookName, err)
	}
	return nil
}

func (e *env) stop() {
	for _, f := range e.onStop {
		f()
	}
	if e.guard != nil {
		_ = e.guard.Stop()
	}
	if e.base != nil {
		e.base.Stop()
	}
	if os.Getenv("DRIFTGUARD_KEEP_BENCH") == "" {
		_ = os.RemoveAll(e.dir)
	}
}

// fastConfig lifts client-go's default 5 QPS so a load generator is limited
// by the API server, not by its own client.
func fastConfig(c *rest.Config) *rest.Config {
	c = rest.CopyConfig(c)
	c.QPS, c.Burst = 5000, 5000
	return c
}

// userClient returns a typed client authenticated as user (client
// certificate) with a high QPS limit.
func (e *env) userClient(b *testing.B, user string, groups []string) kubernetes.Interface {
	b.Helper()
	_, cfg, err := e.cluster.AddUser(user, groups)
	if err != nil {
		b.Fatal(err)
	}
	k, err := kubernetes.NewForConfig(fastConfig(cfg))
	if err != nil {
		b.Fatal(err)
	}
	return k
}

// configMapGuard creates namespace ns (outside Git, so managedObjects counts
// only the ConfigMaps), a repository with n ConfigMaps cm-0000… in one file
// each, data.value "git", and a Guard for it with a one-hour interval, so
// that only the informer reverts drift while a benchmark runs. It waits until
// the Guard is Ready with managedObjects == n.
func (e *env) configMapGuard(b *testing.B, name, ns string, n int, selfHeal bool) {
	b.Helper()
	began := time.Now()
	rev, err := e.createConfigMapGuard(name, ns, n, selfHeal)
	if err != nil {
		b.Fatal(err)
	}
	if err := e.waitGuard(context.Background(), name, rev, n, 3*time.Minute, 200*time.Millisecond); err != nil {
		b.Fatal(err)
	}
	b.Logf("guard %s: %d ConfigMaps applied and Ready in %s", name, n, time.Since(began).Round(time.Millisecond))
}

func (e *env) createConfigMapGuard(name, ns string, n int, selfHeal bool) (string, error) {
	ctx := context.Background()
	if _, err := e.kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		return "", err
	}
	repo, err := e.git.NewRepo(name)
	if err != nil {
		return "", err
	}
	for i := range n {
		if err := repo.WriteFile(filepath.Join("configmaps", cmName(i)+".yaml"), cmDoc(cmName(i), ns, gitValue)); err != nil {
			return "", err
		}
	}
	rev, err := repo.CommitAndPush(fmt.Sprintf("%d ConfigMaps", n))
	if err != nil {
		return "", err
	}
	g := &v1alpha1.Guard{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec:       v1alpha1.GuardSpec{Git: &v1alpha1.GitSource{URL: e.git.URL(name), Ref: "main"}, Interval: metav1.Duration{Duration: time.Hour}, SelfHeal: &selfHeal},
	}
	return rev, e.admin.Create(ctx, g)
}

func cmDoc(name, ns, value string) string {
	return fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: %s\n  namespace: %s\ndata:\n  value: %s\n", name, ns, value)
}

// waitGuard polls Guard name every poll until it is Ready with rev applied
// and n objects.
func (e *env) waitGuard(ctx context.Context, name, rev string, n int, timeout, poll time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		var got v1alpha1.Guard
		err := e.admin.Get(ctx, client.ObjectKey{Name: name}, &got)
		if err == nil && meta.IsStatusConditionTrue(got.Status.Conditions, v1alpha1.ConditionReady) &&
			got.Status.LastAppliedRevision == rev && int(got.Status.ManagedObjects) == n {
			return nil
		}
		if err := e.alive(); err != nil {
			return err
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("guard %s not Ready with %d objects of %s within %s: %v %+v", name, n, rev, timeout, err, got.Status)
		}
		time.Sleep(poll)
	}
}

const gitValue = "git"

func cmName(i int) string { return fmt.Sprintf("cm-%04d", i) }

// stamped is an audit record and the time it reached the writer.
type stamped struct {
	at  time.Time
	rec audit.Record
}

// stampedRecords is the io.Writer the guard's stdout audit sink writes to.
type stampedRecords struct {
	mu      sync.Mutex
	partial []byte
	recs    []stamped
	bad     int
}

func newStampedRecords() *stampedRecords { return &stampedRecords{recs: make([]stamped, 0, 1<<14)} }

func (s *stampedRecords) Write(p []byte) (int, error) {
	at := time.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	s.partial = append(s.partial, p...)
	for {
		line, rest, ok := bytes.Cut(s.partial, []byte{'\n'})
		if !ok {
			break
		}
		var r audit.Record
		if err := json.Unmarshal(line, &r); err != nil {
			s.bad++
		} else {
			s.recs = append(s.recs, stamped{at: at, rec: r})
		}
		s.partial = rest
	}
	if len(s.partial) == 0 {
		s.partial = s.partial[:0:0]
	}
	return len(p), nil
}

// since returns the records from index i on, and the next index.
func (s *stampedRecords) since(i int) ([]stamped, int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := append([]stamped(nil), s.recs[i:]...)
	return out, len(s.recs)
}

func (s *stampedRecords) len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.recs)
}

// liveValues returns the string live values of a record's fields.
func liveValues(r audit.Record) []string {
	var out []string
	for _, f := range r.Fields {
		if v, ok := f.Live.(string); ok {
			out = append(out, v)
		}
	}
	return out
}

func parseRV(rv string) uint64 {
	n, _ := strconv.ParseUint(rv, 10, 64)
	return n
}

// countingGitFront serves git on a loopback listener of its own and counts
// the requests: the guard fetches through it. Close the listener when done.
func countingGitFront(b *testing.B, git *gitserver.Server) (net.Listener, *atomic.Int64) {
	b.Helper()
	front, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	var requests atomic.Int64
	handler := git.Handler()
	go func() {
		_ = http.Serve(front, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			requests.Add(1)
			handler.ServeHTTP(w, r)
		}))
	}()
	return front, &requests
}

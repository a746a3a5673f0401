package reconcile

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr/testr"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/yaml"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/driftguard/driftguard/api/v1alpha1"
	"github.com/driftguard/driftguard/config"
	"github.com/driftguard/driftguard/devenv"
	"github.com/driftguard/driftguard/health"
	"github.com/driftguard/driftguard/render"
	"github.com/driftguard/driftguard/test/wait"
)

// readsEnv is a real kube-apiserver with the Guard CRD and a manager whose
// cache serves Guards, for the tests of what health and status cost in
// requests.
type readsEnv struct {
	mgr    ctrl.Manager
	reader client.Reader // the API server, uncached
	admin  client.Client
}

func startReadsEnv(t *testing.T) *readsEnv {
	t.Helper()
	devenv.RequireBinaries(t, false)
	ctx, cancel := context.WithCancel(context.Background())
	dir := t.TempDir()
	log := testr.New(t)
	crds := filepath.Join(dir, "crds")
	if err := config.WriteCRDs(crds); err != nil {
		t.Fatal(err)
	}
	cluster, err := devenv.Start(ctx, devenv.Options{CRDDirs: []string{crds}, Dir: filepath.Join(dir, "cluster"), Log: log})
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cluster.Stop() })
	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, v1alpha1.AddToScheme} {
		if err := add(scheme); err != nil {
			t.Fatal(err)
		}
	}
	mgr, err := ctrl.NewManager(cluster.Config, ctrl.Options{Scheme: scheme, Logger: log, Metrics: metricsserver.Options{BindAddress: "0"}})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	admin, err := client.New(cluster.Config, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	return &readsEnv{mgr: mgr, reader: mgr.GetAPIReader(), admin: admin}
}

// countingReader counts the lists made through a reader of the API server,
// by kind of list.
type countingReader struct {
	client.Reader
	mu    sync.Mutex
	lists map[string]int
}

func (c *countingReader) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	c.mu.Lock()
	if c.lists == nil {
		c.lists = map[string]int{}
	}
	c.lists[list.GetObjectKind().GroupVersionKind().Kind]++
	c.mu.Unlock()
	return c.Reader.List(ctx, list, opts...)
}

func (c *countingReader) take(kind string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := c.lists[kind]
	delete(c.lists, kind)
	return n
}

// apiState answers as the drift informer would, from the API server: the
// live object and its health assessed from it.
type apiState struct{ reader client.Reader }

func (s apiState) Live(gvk schema.GroupVersionKind, ns, name string) (*unstructured.Unstructured, bool) {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(gvk)
	if err := s.reader.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, u); err != nil {
		return nil, true
	}
	return u, true
}

func (s apiState) Health(gvk schema.GroupVersionKind, ns, name string) (health.Result, bool) {
	u, _ := s.Live(gvk, ns, name)
	if u == nil {
		return health.Result{State: health.Missing, Message: "not found"}, true
	}
	return health.Assess(u), true
}

// create creates the objects of a YAML stream and returns them.
func (e *readsEnv) create(t *testing.T, manifests string) []*unstructured.Unstructured {
	t.Helper()
	var out []*unstructured.Unstructured
	dec := yaml.NewYAMLOrJSONDecoder(strings.NewReader(manifests), 4096)
	for {
		u := &unstructured.Unstructured{}
		if err := dec.Decode(&u.Object); err != nil {
			break
		}
		if len(u.Object) == 0 {
			continue
		}
		if err := e.admin.Create(context.Background(), u); err != nil {
			t.Fatalf("create %s: %v", u.GetName(), err)
		}
		out = append(out, u)
	}
	return out
}

// webDeployment runs one replica of app web; webService selects it.
const (
	webDeployment = `apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: shop}
spec:
  replicas: 1
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec: {containers: [{name: app, image: "registry.example/app:1"}]}
`
	webService = `apiVersion: v1
kind: Service
metadata: {name: web, namespace: shop}
spec:
  selector: {app: web}
  ports: [{port: 80}]
`
)

// TestHealthReadsOnlyWhatDecides: on a real API server, a Deployment
// scaled to zero is Healthy without a pod list, one with replicas is
// checked with its pods; a Service without a selector is not checked with
// EndpointSlices, one with a selector is; summaries made in one batch
// (WithSharedReads) list a namespace's EndpointSlices once, separate
// summaries once each.
func TestHealthReadsOnlyWhatDecides(t *testing.T) {
	e := startReadsEnv(t)
	ctx := t.Context()
	if err := e.admin.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "shop"}}); err != nil {
		t.Fatal(err)
	}
	objs := e.create(t, `
apiVersion: apps/v1
kind: Deployment
metadata: {name: idle, namespace: shop}
spec:
  replicas: 0
  selector: {matchLabels: {app: idle}}
  template:
    metadata: {labels: {app: idle}}
    spec: {containers: [{name: app, image: "registry.example/app:1"}]}
---
`+webDeployment+`---
apiVersion: v1
kind: Service
metadata: {name: external, namespace: shop}
spec:
  ports: [{port: 80}]
---
`+webService+`---
apiVersion: apps/v1
kind: Deployment
metadata: {name: api, namespace: shop}
spec:
  replicas: 2
  selector: {matchLabels: {app: api}}
  template:
    metadata: {labels: {app: api}}
    spec: {containers: [{name: app, image: "registry.example/api:1"}]}
---
apiVersion: v1
kind: Service
metadata: {name: api, namespace: shop}
spec:
  selector: {app: api}
  ports: [{port: 80}]
`)
	byName := map[string]*unstructured.Unstructured{}
	for _, o := range objs {
		byName[o.GetKind()+"/"+o.GetName()] = o
	}
	counter := &countingReader{Reader: e.reader}
	st := apiState{e.reader}
	for _, tc := range []struct {
		name               string
		objects            []string
		wantPods, wantEPSs int
	}{
		{"Deployment scaled to zero: no pod list", []string{"Deployment/idle"}, 0, 0},
		{"Deployment with replicas: its pods", []string{"Deployment/web"}, 1, 0},
		{"two Deployments with replicas in one namespace: one pod list", []string{"Deployment/web", "Deployment/api"}, 1, 0},
		{"Service without selector: no EndpointSlice list", []string{"Service/external"}, 0, 0},
		{"Service with selector: its EndpointSlices", []string{"Service/web"}, 0, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tr := &HealthTracker{Source: st, Live: st, Reader: counter}
			var us []*unstructured.Unstructured
			for _, n := range tc.objects {
				us = append(us, byName[n])
			}
			tr.Summarize(ctx, &v1alpha1.Guard{ObjectMeta: metav1.ObjectMeta{Name: "g"}}, snapshotOf(t, us...))
			if pods, eps := counter.take("PodList"), counter.take("EndpointSliceList"); pods != tc.wantPods || eps != tc.wantEPSs {
				t.Fatalf("%d pod lists, %d EndpointSlice lists; want %d, %d", pods, eps, tc.wantPods, tc.wantEPSs)
			}
		})
	}

	// A namespace filled with other pods (anyone who may create pods there
	// can): past the bound, one aborted list, then each Deployment's own.
	for i := range 3 {
		e.create(t, fmt.Sprintf(`
apiVersion: v1
kind: Pod
metadata: {name: filler-%d, namespace: shop, labels: {app: filler}}
spec: {containers: [{name: app, image: "registry.example/app:1"}]}
`, i))
	}
	both := snapshotOf(t, byName["Deployment/web"], byName["Deployment/api"])
	var states []health.State
	for _, tc := range []struct {
		perDeployment, wantPods int
	}{{0, 1}, {1, 3}} {
		tr := &HealthTracker{Source: st, Live: st, Reader: counter, PodsPerDeployment: tc.perDeployment}
		sum := tr.Summarize(ctx, &v1alpha1.Guard{ObjectMeta: metav1.ObjectMeta{Name: "g"}}, both)
		states = append(states, sum.State)
		if pods := counter.take("PodList"); pods != tc.wantPods {
			t.Fatalf("%d pods per Deployment, 3 other pods: %d pod lists, want %d", tc.perDeployment, pods, tc.wantPods)
		}
	}
	if states[0] != states[1] {
		t.Fatalf("health from one list %s, from each selector's %s", states[0], states[1])
	}

	// Two Guards, a Service each in one namespace.
	guards := []*v1alpha1.Guard{{ObjectMeta: metav1.ObjectMeta{Name: "a"}}, {ObjectMeta: metav1.ObjectMeta{Name: "b"}}}
	snaps := []*render.Snapshot{snapshotOf(t, byName["Service/web"]), snapshotOf(t, byName["Service/api"])}
	for _, batch := range []bool{false, true} {
		tr := &HealthTracker{Source: st, Live: st, Reader: counter}
		sctx := ctx
		want := 2
		if batch {
			sctx, want = WithSharedReads(ctx), 1
		}
		for i, g := range guards {
			sum := tr.Summarize(sctx, g, snaps[i])
			if sum.State != health.Progressing {
				t.Fatalf("batch %v: Guard %s %+v, want Progressing (no endpoints)", batch, g.Name, sum)
			}
		}
		if eps := counter.take("EndpointSliceList"); eps != want {
			t.Fatalf("batch %v: %d EndpointSlice lists for two Guards' Services in one namespace, want %d", batch, eps, want)
		}
	}
}

// versionedState is apiState that, like the drift informers' cache, also
// tells an object's resourceVersion without decoding it (apply.LiveCache),
// and counts the objects it decodes.
type versionedState struct {
	apiState
	decoded *int
}

func (s versionedState) Live(gvk schema.GroupVersionKind, ns, name string) (*unstructured.Unstructured, bool) {
	*s.decoded++
	return s.apiState.Live(gvk, ns, name)
}

func (s versionedState) LiveVersion(gvk schema.GroupVersionKind, ns, name string) (string, bool) {
	u, _ := s.apiState.Live(gvk, ns, name)
	if u == nil {
		return "", false
	}
	return u.GetResourceVersion(), true
}

// TestHealthDecodesOnlyChangedObjects: on a real API server, a summary of
// a Deployment and a Service that have not changed since the last one
// decodes neither and reads nothing (their answers are kept by
// resourceVersion); once the Service changes it is decoded and its
// EndpointSlices read again.
func TestHealthDecodesOnlyChangedObjects(t *testing.T) {
	e := startReadsEnv(t)
	ctx := t.Context()
	if err := e.admin.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "shop"}}); err != nil {
		t.Fatal(err)
	}
	objs := e.create(t, webDeployment+"---\n"+webService)
	counter := &countingReader{Reader: e.reader}
	var decoded int
	st := versionedState{apiState{e.reader}, &decoded}
	tr := &HealthTracker{Source: st, Live: st, Reader: counter}
	g := &v1alpha1.Guard{ObjectMeta: metav1.ObjectMeta{Name: "g"}}
	snap := snapshotOf(t, objs...)
	summarize := func(step string, wantDecoded, wantPods, wantEPSs int) {
		t.Helper()
		decoded = 0
		tr.Summarize(ctx, g, snap)
		if pods, eps := counter.take("PodList"), counter.take("EndpointSliceList"); decoded != wantDecoded || pods != wantPods || eps != wantEPSs {
			t.Fatalf("%s: %d objects decoded, %d pod lists, %d EndpointSlice lists; want %d, %d, %d", step, decoded, pods, eps, wantDecoded, wantPods, wantEPSs)
		}
	}
	summarize("first summary", 2, 1, 1)
	summarize("nothing changed", 0, 0, 0)
	svc := &corev1.Service{}
	if err := e.admin.Get(ctx, client.ObjectKey{Namespace: "shop", Name: "web"}, svc); err != nil {
		t.Fatal(err)
	}
	svc.Labels = map[string]string{"changed": "yes"}
	if err := e.admin.Update(ctx, svc); err != nil {
		t.Fatal(err)
	}
	summarize("the Service changed", 1, 0, 1)
}

// countingStatus counts the status patches sent through a client of the
// API server.
type countingStatus struct {
	client.Client
	mu      sync.Mutex
	patches int
}

func (c *countingStatus) Status() client.SubResourceWriter {
	return countingStatusWriter{c.Client.Status(), c}
}

func (c *countingStatus) take() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := c.patches
	c.patches = 0
	return n
}

type countingStatusWriter struct {
	client.SubResourceWriter
	c *countingStatus
}

func (w countingStatusWriter) Patch(ctx context.Context, obj client.Object, patch client.Patch, opts ...client.SubResourcePatchOption) error {
	w.c.mu.Lock()
	w.c.patches++
	w.c.mu.Unlock()
	return w.SubResourceWriter.Patch(ctx, obj, patch, opts...)
}

// noDrift is a drift watcher that has seen no drift.
type noDrift struct{}

func (noDrift) Drifted(string, int) (int, []render.ObjectKey)         { return 0, nil }
func (noDrift) Accepted(schema.GroupVersionKind, string, string) bool { return false }
func (noDrift) Fights(string) []string                                { return nil }

// TestDriftStatusDoesNotWriteAStatusAgain: on a real API server, a change
// the informer reports for a Guard whose cached status already holds this
// process's last write, and equals what it would write, costs no status
// patch; without StatusWrites it costs one, as before; while the cache
// lags behind the last write, or while a reconcile of the Guard runs,
// nothing is sent and the Guard stays pending.
func TestDriftStatusDoesNotWriteAStatusAgain(t *testing.T) {
	e := startReadsEnv(t)
	ctx := t.Context()
	c := &countingStatus{Client: e.mgr.GetClient()}
	taken := c.take
	g := &v1alpha1.Guard{ObjectMeta: metav1.ObjectMeta{Name: "app"}, Spec: v1alpha1.GuardSpec{Git: &v1alpha1.GitSource{URL: "http://127.0.0.1:1/app.git"}}}
	if err := e.admin.Create(ctx, g); err != nil {
		t.Fatal(err)
	}
	writes := &StatusWrites{}
	d := &DriftStatus{Client: c, Drift: noDrift{}, Log: testr.New(t), Writes: writes}
	cached := func(what string, ok func(*v1alpha1.Guard) bool) {
		t.Helper()
		wait.Eventually(t, 30*time.Second, what, func() error {
			var cur v1alpha1.Guard
			if err := e.mgr.GetClient().Get(ctx, client.ObjectKey{Name: "app"}, &cur); err != nil {
				return err
			}
			if !ok(&cur) {
				return fmt.Errorf("cached at resourceVersion %s", cur.ResourceVersion)
			}
			return nil
		})
	}
	cached("the Guard in the cache", func(*v1alpha1.Guard) bool { return true })

	// The first change: written (nothing remembered).
	if err := d.patch(ctx, "app", pendingWork{changed: true}); err != nil {
		t.Fatal(err)
	}
	if n := taken(); n != 1 {
		t.Fatalf("first change: %d status patches, want 1", n)
	}
	cached("the write in the cache", func(cur *v1alpha1.Guard) bool { _, holds := writes.holds(cur); return holds })

	// The same status again, the cache holding the write: nothing sent.
	if err := d.patch(ctx, "app", pendingWork{changed: true}); err != nil {
		t.Fatal(err)
	}
	if n := taken(); n != 0 {
		t.Fatalf("a change already written: %d status patches, want 0", n)
	}

	// Without StatusWrites: written, as before.
	plain := &DriftStatus{Client: c, Drift: noDrift{}, Log: testr.New(t)}
	if err := plain.patch(ctx, "app", pendingWork{changed: true}); err != nil {
		t.Fatal(err)
	}
	if n := taken(); n != 1 {
		t.Fatalf("without StatusWrites: %d status patches, want 1", n)
	}

	pending := func(what string) {
		t.Helper()
		d.mu.Lock()
		_, pending := d.pending["app"]
		d.pending = nil
		d.mu.Unlock()
		if n := taken(); n != 0 || !pending {
			t.Fatalf("%s: %d status patches, pending %v; want none, pending for the next period", what, n, pending)
		}
	}
	// A reconcile of the Guard running: it writes the status.
	done := writes.reconciling("app")
	if err := d.patch(ctx, "app", pendingWork{changed: true, health: true}); err != nil {
		t.Fatal(err)
	}
	pending("while a reconcile runs")
	done()

	// A write the cache has not shown (remembered ahead of it).
	writes.wrote("app", "99999999999")
	if err := d.patch(ctx, "app", pendingWork{changed: true}); err != nil {
		t.Fatal(err)
	}
	pending("cache behind the last write")
}

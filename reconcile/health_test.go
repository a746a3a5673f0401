package reconcile

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/driftguard/driftguard/api/v1alpha1"
	"github.com/driftguard/driftguard/health"
	"github.com/driftguard/driftguard/render"
)

// cacheFixture is what the drift informer holds: live objects (as its
// cache keeps them) and their assessed health.
type cacheFixture struct {
	live   map[string]*unstructured.Unstructured
	health map[string]health.Result
}

func fixtureKey(gvk schema.GroupVersionKind, ns, name string) string {
	return gvk.Kind + "/" + ns + "/" + name
}

func (c cacheFixture) Live(gvk schema.GroupVersionKind, ns, name string) (*unstructured.Unstructured, bool) {
	return c.live[fixtureKey(gvk, ns, name)], true
}

func (c cacheFixture) Health(gvk schema.GroupVersionKind, ns, name string) (health.Result, bool) {
	if r, ok := c.health[fixtureKey(gvk, ns, name)]; ok {
		return r, true
	}
	return health.Result{State: health.Missing, Message: "not found"}, true
}

func deploy(name, uid, rv string, generation int64) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "apps/v1", "kind": "Deployment", "metadata": map[string]any{
		"name": name, "namespace": "shop", "uid": uid, "resourceVersion": rv, "generation": generation,
	}}}
	return u
}

func TestSummarizeWaitsForTheWatchToShowAnApply(t *testing.T) {
	healthy := health.Result{State: health.Healthy, Message: "3 of 3 replicas ready"}
	for _, tc := range []struct {
		name        string
		cached      *unstructured.Unstructured // nil: not in the cache
		applied     *unstructured.Unstructured // nil: not applied by this process
		appliedAgo  time.Duration
		want        string
		wantRecheck time.Duration
	}{
		{name: "not applied: the informer's answer", cached: deploy("web", "u1", "100", 1), want: "Healthy"},
		{name: "cache behind the apply", cached: deploy("web", "u1", "100", 1), applied: deploy("web", "u1", "105", 2),
			want: "Progressing: applied; waiting for the watch to show it", wantRecheck: unobservedRecheck},
		{name: "cache has the apply", cached: deploy("web", "u1", "105", 2), applied: deploy("web", "u1", "105", 2), want: "Healthy"},
		{name: "cache newer than the apply", cached: deploy("web", "u1", "120", 3), applied: deploy("web", "u1", "105", 2), want: "Healthy"},
		{name: "created, not cached yet", applied: deploy("web", "u2", "105", 1),
			want: "Progressing: applied; waiting for the watch to show it", wantRecheck: unobservedRecheck},
		{name: "never seen within the grace: the informer's answer", applied: deploy("web", "u2", "105", 1), appliedAgo: 2 * unobservedGrace,
			want: "Missing: not found"},
		{name: "resourceVersions not comparable: by generation, behind", cached: deploy("web", "u1", "a", 1), applied: deploy("web", "u1", "b", 2),
			want: "Progressing: applied; waiting for the watch to show it", wantRecheck: unobservedRecheck},
		{name: "resourceVersions not comparable: by generation, caught up", cached: deploy("web", "u1", "b", 2), applied: deploy("web", "u1", "c", 2),
			want: "Healthy"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			gvk := schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"}
			fx := cacheFixture{live: map[string]*unstructured.Unstructured{}, health: map[string]health.Result{}}
			if tc.cached != nil {
				fx.live[fixtureKey(gvk, "shop", "web")] = tc.cached
				fx.health[fixtureKey(gvk, "shop", "web")] = healthy
			}
			tr := &HealthTracker{Source: fx, Live: fx}
			if tc.applied != nil {
				tr.Applied(tc.applied)
				a := tr.applied[render.KeyOf(tc.applied)]
				a.at = a.at.Add(-tc.appliedAgo)
				tr.applied[render.KeyOf(tc.applied)] = a
			}
			snap := snapshotOf(t, deploy("web", "", "", 0))
			sum := tr.Summarize(context.Background(), &v1alpha1.Guard{}, snap)
			got := string(sum.State)
			if len(sum.Unhealthy) > 0 {
				got = strings.TrimPrefix(sum.Unhealthy[0], "Deployment shop/web: ")
			}
			if got != tc.want || sum.RecheckAfter != tc.wantRecheck {
				t.Fatalf("got %q (recheck %s), want %q (recheck %s)", got, sum.RecheckAfter, tc.want, tc.wantRecheck)
			}
			if _, still := tr.applied[render.KeyOf(deploy("web", "", "", 0))]; still && tc.wantRecheck == 0 {
				t.Fatalf("the apply is still remembered once the informer's answer stands")
			}
		})
	}
}

func TestSummarizeWorstStateAndList(t *testing.T) {
	gvk := schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"}
	fx := cacheFixture{live: map[string]*unstructured.Unstructured{}, health: map[string]health.Result{}}
	var objs []*unstructured.Unstructured
	for i := range 25 {
		name := fmt.Sprintf("d%02d", i)
		objs = append(objs, deploy(name, "", "", 0))
		r := health.Result{State: health.Healthy}
		switch {
		case i == 3:
			r = health.Result{State: health.Degraded, Message: "progress deadline exceeded"}
		case i >= 2:
			r = health.Result{State: health.Progressing, Message: "1 of 2 replicas ready"}
		}
		fx.health[fixtureKey(gvk, "shop", name)] = r
	}
	tr := &HealthTracker{Source: fx, Live: fx}
	snap := snapshotOf(t, objs...)

	sum := tr.Summarize(context.Background(), &v1alpha1.Guard{}, snap)
	if sum.State != health.Degraded || sum.Count != 23 || len(sum.Unhealthy) != maxUnhealthyListed+1 ||
		sum.Unhealthy[maxUnhealthyListed] != "and 3 more" || sum.Unhealthy[1] != "Deployment shop/d03: Degraded: progress deadline exceeded" {
		t.Fatalf("summary %+v", sum)
	}

	// healthChecks: only the objects named count.
	g := &v1alpha1.Guard{Spec: v1alpha1.GuardSpec{HealthChecks: []v1alpha1.ObjectReference{
		{APIVersion: "apps/v1", Kind: "Deployment", Namespace: "shop", Name: "d00"},
		{APIVersion: "apps/v1", Kind: "Deployment", Namespace: "shop", Name: "d02"},
	}}}
	sum = tr.Summarize(context.Background(), g, snap)
	if want := []string{"Deployment shop/d02: Progressing: 1 of 2 replicas ready"}; sum.State != health.Progressing || !reflect.DeepEqual(sum.Unhealthy, want) {
		t.Fatalf("with healthChecks: %+v", sum)
	}
}

func snapshotOf(t *testing.T, objs ...*unstructured.Unstructured) *render.Snapshot {
	t.Helper()
	var list []*render.Object
	for _, u := range objs {
		list = append(list, render.NewObject(u, render.Source{}))
	}
	snap, err := render.NewSnapshot("http://127.0.0.1/repo.git", "abc", list)
	if err != nil {
		t.Fatal(err)
	}
	return snap
}

func TestAppliedForgetsWhatNoSummaryAsksAbout(t *testing.T) {
	tr := &HealthTracker{}
	old := deploy("pruned", "u1", "10", 1)
	tr.Applied(old)
	a := tr.applied[render.KeyOf(old)]
	a.at = a.at.Add(-2 * unobservedGrace)
	tr.applied[render.KeyOf(old)] = a
	tr.sweptAt = tr.sweptAt.Add(-2 * unobservedGrace)
	tr.Applied(deploy("web", "u2", "20", 1))
	if _, ok := tr.applied[render.KeyOf(old)]; ok || len(tr.applied) != 1 {
		t.Fatalf("remembered %v, want only web", tr.applied)
	}
}

func TestListedPods(t *testing.T) {
	pod := func(ns, name, app string) *unstructured.Unstructured {
		return &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Pod",
			"metadata": map[string]any{"name": name, "namespace": ns, "labels": map[string]any{"app": app}}}}
	}
	l := listedPods{objs: []*unstructured.Unstructured{pod("shop", "web-1", "web"), pod("shop", "api-1", "api"), pod("other", "web-2", "web")}}
	web := labels.SelectorFromSet(labels.Set{"app": "web"})
	tests := []struct {
		name      string
		l         listedPods
		namespace string
		selector  labels.Selector
		want      []string
		wantErr   bool
	}{
		{"the selector's pods of the namespace", l, "shop", web, []string{"web-1"}, false},
		{"another namespace's pods are not its", l, "other", web, []string{"web-2"}, false},
		{"no selector: every pod of the namespace", l, "shop", nil, []string{"web-1", "api-1"}, false},
		{"the list's error", listedPods{err: errors.New("forbidden")}, "shop", web, nil, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := tt.l.List(context.Background(), health.PodGVK, tt.namespace, tt.selector)
			if (err != nil) != tt.wantErr {
				t.Fatalf("error %v, want one: %v", err, tt.wantErr)
			}
			var names []string
			for _, p := range got {
				names = append(names, p.GetName())
			}
			if !slices.Equal(names, tt.want) {
				t.Fatalf("pods %v, want %v", names, tt.want)
			}
		})
	}
}

// TestHealthNotSharedAcrossGuards: a Guard's summary leaves out the
// objects of its revision another Guard owns, and what one account read
// of a Service (here "not readable": its EndpointSlices are forbidden to
// it) is never another account's answer. Until 2026-12-05 a tenant's
// Guard that declared another Guard's Service, read first as its own
// account, made that Service Healthy for its owner until it changed.
func TestHealthNotSharedAcrossGuards(t *testing.T) {
	gvk := schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"}
	fx := cacheFixture{live: map[string]*unstructured.Unstructured{}, health: map[string]health.Result{
		fixtureKey(gvk, "shop", "theirs"): {State: health.Degraded, Message: "progress deadline exceeded"},
		fixtureKey(gvk, "shop", "mine"):   {State: health.Healthy},
	}}
	theirs, mine := deploy("theirs", "", "", 0), deploy("mine", "", "", 0)
	owners := map[string]string{"theirs": "a", "mine": "b"}
	tr := &HealthTracker{Source: fx, Live: fx, Owner: func(k render.ObjectKey) string { return owners[k.Name] }}
	sum := tr.Summarize(context.Background(), &v1alpha1.Guard{ObjectMeta: metav1.ObjectMeta{Name: "b"}}, snapshotOf(t, theirs, mine))
	if sum.State != health.Healthy {
		t.Errorf("guard b's health %s %v: guard a's Deployment counted", sum.State, sum.Unhealthy)
	}
	sum = tr.Summarize(context.Background(), &v1alpha1.Guard{ObjectMeta: metav1.ObjectMeta{Name: "a"}}, snapshotOf(t, theirs))
	if sum.State != health.Degraded {
		t.Errorf("guard a's health %s, want its Deployment's Degraded", sum.State)
	}

	svc := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Service", "metadata": map[string]any{
		"name": "web", "namespace": "shop", "resourceVersion": "7"}, "spec": map[string]any{"selector": map[string]any{"app": "web"}}}}
	forbidden := forbiddenReader{}
	got := tr.assessServices(context.Background(), forbidden, "tenant-b", map[int]*unstructured.Unstructured{0: svc})
	if got[0].result.State != health.Healthy || got[0].result.Message != "endpoints not readable" {
		t.Fatalf("as an account that may not list EndpointSlices: %+v", got[0].result)
	}
	key := render.KeyOf(svc)
	if _, _, ok := tr.cachedAt(readKey{"tenant-b", key}, "7"); !ok {
		t.Error("the answer is not kept for the account that read it")
	}
	if r, _, ok := tr.cachedAt(readKey{"", key}, "7"); ok {
		t.Errorf("another account's answer %+v served to the guard's own reads", r)
	}

	// A health check naming guard a's Deployment is read as guard b's
	// account (which may not), not from the informers (the guard's).
	tr.Reader = forbidden
	check := func(guard string) HealthSummary {
		g := &v1alpha1.Guard{ObjectMeta: metav1.ObjectMeta{Name: guard}}
		g.Spec.HealthChecks = []v1alpha1.ObjectReference{{APIVersion: "apps/v1", Kind: "Deployment", Namespace: "shop", Name: "theirs"}}
		return tr.Summarize(context.Background(), g, nil)
	}
	if sum := check("b"); sum.State != health.Unknown || len(sum.Unhealthy) != 1 || !strings.Contains(sum.Unhealthy[0], "forbidden") {
		t.Errorf("guard b's health check of guard a's Deployment: %s %v, want Unknown (forbidden)", sum.State, sum.Unhealthy)
	}
	if sum := check("a"); sum.State != health.Degraded {
		t.Errorf("guard a's health check of its own Deployment: %s, want the informers' Degraded", sum.State)
	}
}

// forbiddenReader refuses every read, as the API server refuses an
// account without the right.
type forbiddenReader struct{ client.Reader }

func (forbiddenReader) List(context.Context, client.ObjectList, ...client.ListOption) error {
	return apierrors.NewForbidden(schema.GroupResource{Group: "discovery.k8s.io", Resource: "endpointslices"}, "", errors.New("no"))
}

func (forbiddenReader) Get(_ context.Context, key client.ObjectKey, _ client.Object, _ ...client.GetOption) error {
	return apierrors.NewForbidden(schema.GroupResource{Group: "apps", Resource: "deployments"}, key.Name, errors.New("no"))
}

package reconcile

import (
	"errors"
	"fmt"
	"reflect"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/driftguard/driftguard/api/v1alpha1"
	"github.com/driftguard/driftguard/apply"
	"github.com/driftguard/driftguard/health"
	"github.com/driftguard/driftguard/render"
)

// TestFailedObjects: status.failed names each object that failed, with
// its error, in apply order, at most maxFailedListed.
func TestFailedObjects(t *testing.T) {
	obj := func(name string) *render.Object {
		u := &unstructured.Unstructured{}
		u.SetAPIVersion("apps/v1")
		u.SetKind("Deployment")
		u.SetNamespace("shop")
		u.SetName(name)
		return render.NewObject(u, render.Source{})
	}
	web := v1alpha1.ObjectName{Group: "apps", Kind: "Deployment", Namespace: "shop", Name: "web"}
	many := apply.ChangeSet{}
	for i := range maxFailedListed + 5 {
		many = append(many, apply.Entry{Object: obj(fmt.Sprint("d", i)), Err: errors.New("refused")})
	}
	for _, tt := range []struct {
		name  string
		cs    apply.ChangeSet
		want  []v1alpha1.FailedObject
		count int
	}{
		{"none failed", apply.ChangeSet{{Object: obj("web"), Action: apply.Configured}}, nil, 0},
		{"one of two", apply.ChangeSet{{Object: obj("api"), Action: apply.Configured}, {Object: obj("web"), Err: errors.New("web.yaml: field is immutable")}},
			[]v1alpha1.FailedObject{{ObjectName: web, Error: "web.yaml: field is immutable"}}, 1},
		{"bounded", many, nil, maxFailedListed},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got := failedObjects(tt.cs)
			if len(got) != tt.count || (tt.want != nil && !reflect.DeepEqual(got, tt.want)) {
				t.Errorf("failedObjects = %+v, want %d: %+v", got, tt.count, tt.want)
			}
		})
	}
}

// TestSummarizeListsUnhealthyObjects: status.unhealthy names the objects
// that are not healthy, with state and message, in the order of the
// condition's message, which alone says how many more there are.
func TestSummarizeListsUnhealthyObjects(t *testing.T) {
	key := func(name string) render.ObjectKey {
		return render.ObjectKey{Group: "apps", Kind: "Deployment", Namespace: "shop", Name: name}
	}
	targets := []healthTarget{{key: key("web")}, {key: key("api")}, {key: key("db")}}
	results := []health.Result{{State: health.Progressing, Message: "1 of 2 replicas ready"}, {State: health.Healthy}, {State: health.Degraded}}
	sum := summarize(targets, results, 0)
	want := []v1alpha1.UnhealthyObject{
		{ObjectName: v1alpha1.ObjectName{Group: "apps", Kind: "Deployment", Namespace: "shop", Name: "db"}, State: "Degraded"},
		{ObjectName: v1alpha1.ObjectName{Group: "apps", Kind: "Deployment", Namespace: "shop", Name: "web"}, State: "Progressing", Message: "1 of 2 replicas ready"},
	}
	if !reflect.DeepEqual(sum.Objects, want) || sum.Count != 2 {
		t.Fatalf("objects %+v (count %d), want %+v", sum.Objects, sum.Count, want)
	}
	if wantText := []string{"Deployment shop/db: Degraded", "Deployment shop/web: Progressing: 1 of 2 replicas ready"}; !reflect.DeepEqual(sum.Unhealthy, wantText) {
		t.Fatalf("texts %q, want %q", sum.Unhealthy, wantText)
	}

	var many []healthTarget
	var failing []health.Result
	for i := range maxUnhealthyListed + 3 {
		many = append(many, healthTarget{key: key(fmt.Sprintf("d%02d", i))})
		failing = append(failing, health.Result{State: health.Degraded})
	}
	sum = summarize(many, failing, 0)
	if len(sum.Objects) != maxUnhealthyListed || len(sum.Unhealthy) != maxUnhealthyListed+1 || sum.Unhealthy[maxUnhealthyListed] != "and 3 more" {
		t.Fatalf("bounded: %d objects, texts %q", len(sum.Objects), sum.Unhealthy)
	}
}

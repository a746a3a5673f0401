package reconcile

import (
	"context"
	"sync"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/driftguard/driftguard/health"
)

// sharedReads holds the EndpointSlice lists made for one batch of health
// summaries (the Guards DriftStatus sums up in one period), by reader and
// namespace. Every summary of a batch was asked for before the batch
// began, so a list made during the batch is as new as one of its own: the
// Services of many Guards in one namespace cost one list a period, not one
// each.
type sharedReads struct {
	mu    sync.Mutex
	lists map[sharedKey]sharedList
}

// sharedKey: who reads (the Guard's service account, "" for the guard's
// own identity: a list is never shared across identities) and where.
type sharedKey struct{ reader, namespace string }

type sharedList struct {
	objs health.Objects
	err  error
}

type sharedReadsKey struct{}

// WithSharedReads returns a context under which health summaries share
// their EndpointSlice lists (sharedReads). Only for summaries all asked
// for before it was made.
func WithSharedReads(ctx context.Context) context.Context {
	return context.WithValue(ctx, sharedReadsKey{}, &sharedReads{lists: map[sharedKey]sharedList{}})
}

// endpointSlices lists the EndpointSlices of Services in namespace ns as
// reader (named who), or returns the list a summary of the same batch made.
func endpointSlices(ctx context.Context, reader client.Reader, who, ns string) (health.Objects, error) {
	sel, err := labels.Parse(health.ServiceNameLabel)
	if err != nil {
		panic(err) // a constant
	}
	list := func() (health.Objects, error) {
		return health.ClientLookup(reader).List(ctx, health.EndpointSliceGVK, ns, sel)
	}
	s, _ := ctx.Value(sharedReadsKey{}).(*sharedReads)
	if s == nil {
		return list()
	}
	key := sharedKey{who, ns}
	s.mu.Lock()
	defer s.mu.Unlock() // the batch is summed up in one goroutine: nothing waits long
	if l, ok := s.lists[key]; ok {
		return l.objs, l.err
	}
	objs, err := list()
	s.lists[key] = sharedList{objs, err}
	return objs, err
}

// withEndpoints reports whether a live Service's health depends on its
// EndpointSlices: it has a selector and is not an ExternalName. Without a
// selector its endpoints are not Kubernetes' to make, and the informer's
// answer stands.
func withEndpoints(svc *unstructured.Unstructured) bool {
	typ, _, _ := unstructured.NestedString(svc.Object, "spec", "type")
	sel, _, _ := unstructured.NestedMap(svc.Object, "spec", "selector")
	return typ != "ExternalName" && len(sel) > 0
}

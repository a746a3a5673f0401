package health

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Lookup finds the live objects related to the one being assessed, such as
// the EndpointSlices of a Service. Implementations: Objects (a fixed set, as
// read from a file) and ClientLookup (the API server or a cache).
type Lookup interface {
	// List returns the objects of gvk's group and kind in namespace whose
	// labels match selector. None found is not an error.
	List(ctx context.Context, gvk schema.GroupVersionKind, namespace string, selector labels.Selector) ([]*unstructured.Unstructured, error)
}

// Objects is a Lookup over a fixed set of objects. Kinds match by group and
// kind, whatever the version.
type Objects []*unstructured.Unstructured

// List implements Lookup.
func (o Objects) List(_ context.Context, gvk schema.GroupVersionKind, namespace string, selector labels.Selector) ([]*unstructured.Unstructured, error) {
	if selector == nil {
		selector = labels.Everything()
	}
	var out []*unstructured.Unstructured
	for _, obj := range o {
		if obj == nil || obj.GroupVersionKind().GroupKind() != gvk.GroupKind() || obj.GetNamespace() != namespace {
			continue
		}
		if selector.Matches(labels.Set(obj.GetLabels())) {
			out = append(out, obj)
		}
	}
	return out, nil
}

// ClientLookup returns a Lookup that lists through c: a manager's cached
// client (which starts an informer for each kind it is asked about) or its
// API reader (one request per List).
func ClientLookup(c client.Reader) Lookup { return clientLookup{c} }

type clientLookup struct{ c client.Reader }

func (l clientLookup) List(ctx context.Context, gvk schema.GroupVersionKind, namespace string, selector labels.Selector) ([]*unstructured.Unstructured, error) {
	var opts []client.ListOption
	if selector != nil {
		opts = append(opts, client.MatchingLabelsSelector{Selector: selector})
	}
	objs, _, err := List(ctx, l.c, gvk, namespace, opts...)
	return objs, err
}

// List lists the objects of gvk in namespace through c, narrowed by opts
// (a selector, a limit), and returns them with the list's continue token:
// not empty when a limit left objects out.
func List(ctx context.Context, c client.Reader, gvk schema.GroupVersionKind, namespace string, opts ...client.ListOption) ([]*unstructured.Unstructured, string, error) {
	list := &unstructured.UnstructuredList{}
	list.SetGroupVersionKind(gvk.GroupVersion().WithKind(gvk.Kind + "List"))
	if err := c.List(ctx, list, append([]client.ListOption{client.InNamespace(namespace)}, opts...)...); err != nil {
		return nil, "", fmt.Errorf("list %s in namespace %q: %w", gvk.Kind, namespace, err)
	}
	out := make([]*unstructured.Unstructured, len(list.Items))
	for i := range list.Items {
		out[i] = &list.Items[i]
	}
	return out, list.GetContinue(), nil
}

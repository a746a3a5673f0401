package apply

import (
	"context"
	"fmt"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/driftguard/driftguard/render"
)

// crdTimeout bounds the wait for a new definition to be served.
const crdTimeout = time.Minute

// waitEstablished waits until every definition in crds is Established, so
// that the objects of its kinds can be applied, and makes the client's
// REST mapper learn the new kinds.
func (a *Applier) waitEstablished(ctx context.Context, crds []*render.Object) error {
	if len(crds) == 0 {
		return nil
	}
	reader := a.APIReader()
	for _, o := range crds {
		var crd apiextensionsv1.CustomResourceDefinition
		err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, crdTimeout, true, func(ctx context.Context) (bool, error) {
			if err := reader.Get(ctx, client.ObjectKey{Name: o.Key.Name}, &crd); err != nil {
				return false, client.IgnoreNotFound(err)
			}
			for _, c := range crd.Status.Conditions {
				if c.Type == apiextensionsv1.Established && c.Status == apiextensionsv1.ConditionTrue {
					return true, nil
				}
			}
			return false, nil
		})
		if err != nil {
			return fmt.Errorf("wait for CustomResourceDefinition %s (%s:%d) to be established: %w", o.Key.Name, o.Source.Path, o.Source.Line, err)
		}
	}
	if rm, ok := a.Client.RESTMapper().(meta.ResettableRESTMapper); ok {
		rm.Reset()
	}
	for _, o := range crds {
		// The comparison reads the kinds' list semantics again.
		group, _, _ := unstructured.NestedString(o.Obj().Object, "spec", "group")
		a.Schemas.Forget(group)
	}
	return nil
}

package apply

import (
	"context"
	"encoding/json"
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/driftguard/driftguard/drift"
)

// RemoveAdditions removes from live what someone added that Git does not set
// (drift.Additions): fields another field manager owns, which a forced
// server-side apply leaves in place. It is one JSON patch that first tests
// the resourceVersion of live, so it removes exactly what was seen; an
// object changed since fails, and is judged again as it is now.
func (a *Applier) RemoveAdditions(ctx context.Context, live *unstructured.Unstructured, added []drift.Change) error {
	if len(added) == 0 {
		return nil
	}
	ops := make([]map[string]any, 0, len(added)+1)
	ops = append(ops, map[string]any{"op": "test", "path": "/metadata/resourceVersion", "value": live.GetResourceVersion()})
	for _, c := range added { // deepest and last list elements first (drift.Additions)
		ops = append(ops, map[string]any{"op": "remove", "path": c.Path})
	}
	patch, err := json.Marshal(ops)
	if err != nil {
		return fmt.Errorf("remove additions: %w", err)
	}
	obj := &unstructured.Unstructured{}
	obj.SetGroupVersionKind(live.GroupVersionKind())
	obj.SetNamespace(live.GetNamespace())
	obj.SetName(live.GetName())
	if err := a.Client.Patch(ctx, obj, client.RawPatch(types.JSONPatchType, patch), client.FieldOwner(FieldManager)); err != nil && !IsNotFoundOrGone(err) {
		return fmt.Errorf("remove %d added fields from %s %s/%s: %w", len(added), live.GetKind(), live.GetNamespace(), live.GetName(), a.ExplainForbidden(err, "patch", live.GroupVersionKind(), live.GetNamespace()))
	}
	return nil
}

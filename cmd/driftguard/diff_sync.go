package main

import (
	"context"
	"fmt"
	"io"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/driftguard/driftguard/api/v1alpha1"
	"github.com/driftguard/driftguard/drift"
	"github.com/driftguard/driftguard/reconcile"
	"github.com/driftguard/driftguard/render"
)

// syncCounts counts objects by sync state, as status.sync does.
type syncCounts struct{ inSync, outOfSync, unknown int }

func (n syncCounts) String() string {
	return fmt.Sprintf("%d %s, %d %s, %d %s", n.inSync, v1alpha1.InSync, n.outOfSync, v1alpha1.OutOfSync, n.unknown, v1alpha1.Unknown)
}

// printRemovals prints the fields a sync would remove from an object: the
// guard's own, which Git no longer sets.
func printRemovals(out io.Writer, object, where string, removed []drift.Change) {
	fmt.Fprintf(out, "--- git: %s%s: a sync removes\n", object, where)
	for _, c := range removed {
		fmt.Fprintf(out, "  %s: -%s\n", c.Path, jsonText(c.Live))
	}
}

// previewPrune prints the objects a sync of g would prune (those its
// inventory holds that left Git, with spec.prune) and the objects that
// carry its label without being its own (kept); it reports whether a sync
// would delete anything. The inventory is read from the guard's namespace
// with your rights: without them, diff says so and lists nothing.
func previewPrune(ctx context.Context, out io.Writer, c client.Client, g *v1alpha1.Guard, namespace string, snap *render.Snapshot) (bool, error) {
	inv, err := (&reconcile.InventoryStore{Client: c, Namespace: namespace}).Load(ctx, g)
	if err != nil {
		fmt.Fprintf(out, "prune: Unknown: cannot read the inventory of guard %s in namespace %s (--namespace): %v\n", g.Name, namespace, err)
		return false, nil
	}
	deleted, kept, err := reconcile.PrunePreview(ctx, c, g, snap, inv)
	if err != nil {
		// The kinds that listed are shown; the others are named.
		fmt.Fprintf(out, "prune: incomplete: %v\n", err)
	}
	for _, p := range kept {
		fmt.Fprintf(out, "kept: %s: %s\n", p.Key.Display(), p.Reason)
	}
	if !g.Spec.Prune {
		for _, p := range deleted {
			fmt.Fprintf(out, "left: %s left Git; spec.prune is off, a sync leaves it in the cluster\n", p.Key.Display())
		}
		return false, nil
	}
	for _, p := range deleted {
		fmt.Fprintf(out, "prune: %s left Git; a sync deletes it\n", p.Key.Display())
	}
	if len(deleted) > 0 {
		fmt.Fprintf(out, "a sync would prune %d objects\n", len(deleted))
	}
	return len(deleted) > 0, nil
}

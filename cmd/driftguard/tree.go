package main

import (
	"context"
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"

	"github.com/go-logr/logr"
	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/driftguard/driftguard/api/v1alpha1"
	"github.com/driftguard/driftguard/health"
	"github.com/driftguard/driftguard/reconcile"
	"github.com/driftguard/driftguard/render"
)

func newTreeCommand() *cobra.Command {
	o := &clusterOptions{}
	tree := &cobra.Command{
		Use:   "tree guard NAME",
		Short: "Print the objects a Guard manages, by namespace, with their sync and health state",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return fmt.Errorf("tree: name a kind: tree guard NAME")
		},
	}
	sub := &cobra.Command{
		Use:     "guard NAME",
		Aliases: []string{"gd"},
		Short:   tree.Short,
		Long: `tree guard NAME prints the Guard's inventory (the objects it applied, kept
in the ConfigMap driftguard-inventory-NAME in the guard's namespace, -n) as
a tree: cluster-scoped objects first, then namespace → Kind/name. Each
object has its sync state and its health:

- sync is the guard's own comparison with Git, from status.sync: OutOfSync
  with the paths that differ (or missing), Unknown with the reason, else
  InSync. The status names at most 20 objects that are not in sync; when
  more are, the objects it does not name show "?".
- health is assessed now from the live object with driftguard's built-in
  rules (docs/health.md), as driftguard health does; custom Rego health
  rules the guard loads are not applied here (the Guard line shows the
  guard's own aggregate, status.health).`,
		Example:           `  driftguard tree guard shop -n driftguard-system`,
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: o.completeGuards,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runTree(cmd.Context(), cmd.OutOrStdout(), o, args[0])
		},
	}
	o.bind(sub, true)
	tree.AddCommand(sub)
	return tree
}

// treeEntry is one managed object and its states.
type treeEntry struct {
	key    render.ObjectKey
	sync   string
	health string
}

func runTree(ctx context.Context, out io.Writer, o *clusterOptions, name string) error {
	c, err := o.client()
	if err != nil {
		return err
	}
	var g v1alpha1.Guard
	if err := c.Get(ctx, client.ObjectKey{Name: name}, &g); err != nil {
		return fmt.Errorf("guard %s: %w", name, err)
	}
	var cm corev1.ConfigMap
	cmKey := client.ObjectKey{Namespace: o.namespace, Name: reconcile.InventoryName(name)}
	if err := c.Get(ctx, cmKey, &cm); err != nil {
		if apierrors.IsNotFound(err) {
			return fmt.Errorf("guard %s has no inventory ConfigMap %s in namespace %s: nothing applied yet, or the guard runs in another namespace (-n)", name, cmKey.Name, o.namespace)
		}
		return fmt.Errorf("read inventory %s/%s: %w", o.namespace, cmKey.Name, err)
	}
	store := &reconcile.InventoryStore{Client: c, Namespace: o.namespace, Log: logr.Discard()}
	inv, err := store.Load(ctx, &g)
	if err != nil {
		return err
	}
	syncOf := syncStates(g.Status.Sync)
	lookup := health.ClientLookup(c)
	var entries []treeEntry
	for _, k := range inv.Keys() {
		it, _ := inv.Get(k)
		e := treeEntry{key: k, sync: syncOf(k)}
		e.health = liveHealth(ctx, c, lookup, schema.GroupVersionKind{Group: k.Group, Version: it.Version, Kind: k.Kind}, k)
		entries = append(entries, e)
	}
	return printTree(out, &g, entries)
}

// syncStates returns the sync state of an object as status.sync gives it.
func syncStates(s *v1alpha1.SyncSummary) func(render.ObjectKey) string {
	listed := map[render.ObjectKey]string{}
	complete := false
	if s != nil {
		for _, o := range s.Objects {
			state := string(o.State)
			switch {
			case len(o.Paths) > 0:
				state += " (" + strings.Join(o.Paths, ", ") + ")"
			case o.Reason != "":
				state += " (" + o.Reason + ")"
			}
			listed[render.ObjectKey{Group: o.Group, Kind: o.Kind, Namespace: o.Namespace, Name: o.Name}] = state
		}
		complete = len(s.Objects) >= int(s.OutOfSync)+int(s.Unknown)
	}
	return func(k render.ObjectKey) string {
		switch st, ok := listed[k]; {
		case ok:
			return st
		case s == nil:
			return "-"
		case complete:
			return string(v1alpha1.InSync)
		}
		return "?"
	}
}

// liveHealth assesses the live object now with the built-in rules.
func liveHealth(ctx context.Context, c client.Client, lookup health.Lookup, gvk schema.GroupVersionKind, k render.ObjectKey) string {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(gvk)
	err := c.Get(ctx, client.ObjectKey{Namespace: k.Namespace, Name: k.Name}, u)
	switch {
	case apierrors.IsNotFound(err):
		return string(health.Missing)
	case meta.IsNoMatchError(err):
		return string(health.Unknown) + ": kind " + gvk.String() + " is not served"
	case err != nil:
		return string(health.Unknown) + ": " + err.Error()
	}
	r, err := health.AssessWith(ctx, u, lookup)
	if err != nil {
		return string(health.Unknown) + ": " + err.Error()
	}
	return r.String()
}

// printTree prints the Guard line and its objects: cluster-scoped ones,
// then each namespace with its objects.
func printTree(out io.Writer, g *v1alpha1.Guard, entries []treeEntry) error {
	ready := "Ready=Unknown"
	if c := meta.FindStatusCondition(g.Status.Conditions, v1alpha1.ConditionReady); c != nil {
		ready = "Ready=" + string(c.Status)
	}
	fmt.Fprintf(out, "Guard/%s  revision %s  %s  health %s  drift %d", g.Name, orDash(g.Status.LastAppliedRevision), ready, orDash(g.Status.Health), g.Status.DriftedObjects)
	if g.Spec.Suspend {
		fmt.Fprintf(out, "  suspended")
	}
	fmt.Fprintln(out)
	sort.SliceStable(entries, func(i, j int) bool {
		a, b := entries[i].key, entries[j].key
		if (a.Namespace == "") != (b.Namespace == "") {
			return a.Namespace == ""
		}
		if a.Namespace != b.Namespace {
			return a.Namespace < b.Namespace
		}
		if a.Kind != b.Kind {
			return a.Kind < b.Kind
		}
		return a.Name < b.Name
	})
	// Top-level nodes: each cluster-scoped object, and each namespace.
	type node struct {
		entry    *treeEntry
		ns       string
		children []*treeEntry
	}
	var nodes []*node
	for i := range entries {
		e := &entries[i]
		if e.key.Namespace == "" {
			nodes = append(nodes, &node{entry: e})
			continue
		}
		if len(nodes) == 0 || nodes[len(nodes)-1].ns != e.key.Namespace {
			nodes = append(nodes, &node{ns: e.key.Namespace})
		}
		last := nodes[len(nodes)-1]
		last.children = append(last.children, e)
	}
	tw := tabwriter.NewWriter(out, 0, 8, 2, ' ', 0)
	row := func(prefix string, e *treeEntry) {
		fmt.Fprintf(tw, "%s%s/%s\t%s\t%s\n", prefix, e.key.Kind, e.key.Name, e.sync, e.health)
	}
	for i, n := range nodes {
		branch, indent := "├── ", "│   "
		if i == len(nodes)-1 {
			branch, indent = "└── ", "    "
		}
		if n.entry != nil {
			row(branch, n.entry)
			continue
		}
		fmt.Fprintf(tw, "%s%s\t\t\n", branch, n.ns)
		for j, e := range n.children {
			b := "├── "
			if j == len(n.children)-1 {
				b = "└── "
			}
			row(indent+b, e)
		}
	}
	if len(entries) == 0 {
		fmt.Fprintln(tw, "└── (no objects)")
	}
	return tw.Flush()
}

package main

import (
	"context"
	"fmt"
	"io"
	"os"

	"github.com/go-logr/logr"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/driftguard/driftguard/api/v1alpha1"
	"github.com/driftguard/driftguard/app"
	"github.com/driftguard/driftguard/apply"
	"github.com/driftguard/driftguard/drift"
	"github.com/driftguard/driftguard/drift/schemas"
	"github.com/driftguard/driftguard/reconcile"
	"github.com/driftguard/driftguard/redact"
	"github.com/driftguard/driftguard/render"
	"github.com/driftguard/driftguard/source"
)

func clusterClient(kubeconfig string) (client.Client, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = kubeconfig
	cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{}).ClientConfig()
	if err != nil {
		return nil, err
	}
	return client.New(cfg, client.Options{Scheme: app.Scheme()})
}

// clusterCapabilities asks the cluster of kubeconfig what Helm charts see
// of it (.Capabilities), as the guard does.
func clusterCapabilities(kubeconfig string) (*reconcile.ClusterCapabilities, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = kubeconfig
	cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{}).ClientConfig()
	if err != nil {
		return nil, err
	}
	d, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return nil, err
	}
	return &reconcile.ClusterCapabilities{Discovery: d}, nil
}

// clusterSchemas reads the list semantics of each kind from the OpenAPI of
// the cluster of kubeconfig, as the guard does; nil (client-go's built-in
// schemas) when no discovery client can be made for it.
func clusterSchemas(kubeconfig string) *schemas.Cache {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = kubeconfig
	cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{}).ClientConfig()
	if err != nil {
		return nil
	}
	d, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return nil
	}
	return schemas.New(d, logr.Discard())
}

// runDirDiff compares the manifests in a local checkout with the cluster.
func runDirDiff(ctx context.Context, out io.Writer, kubeconfig, dir, ignoreFile string) (bool, error) {
	var ignore []*drift.Rule
	var err error
	if ignoreFile != "" {
		if ignore, err = reconcile.ReadIgnoreFile(ignoreFile); err != nil {
			return false, err
		}
	}
	// Read as the guard reads Git: symbolic links are not followed. The
	// checkout is rendered before the cluster is asked anything.
	fsys, err := render.OpenLocalFS(dir)
	if err != nil {
		return false, err
	}
	defer func() { _ = fsys.Close() }()
	objs, err := render.Render(fsys, ".", render.Source{URL: dir, Revision: "local"})
	if err != nil {
		return false, fmt.Errorf("%s: %w", dir, err)
	}
	snap, err := render.NewSnapshot(dir, "local", objs)
	if err != nil {
		return false, err
	}
	c, err := clusterClient(kubeconfig)
	if err != nil {
		return false, err
	}
	if snap, err = apply.Decorate(c, "", snap); err != nil {
		return false, err
	}
	return compareWithCluster(ctx, out, c, clusterSchemas(kubeconfig), snap, ignore)
}

// runGuardDiff compares a Guard's Git source with the cluster, object by
// object, and reports whether anything differs.
func runGuardDiff(ctx context.Context, out io.Writer, kubeconfig, guard, namespace string) (bool, error) {
	c, err := clusterClient(kubeconfig)
	if err != nil {
		return false, err
	}
	var g v1alpha1.Guard
	if err := c.Get(ctx, client.ObjectKey{Name: guard}, &g); err != nil {
		return false, fmt.Errorf("guard %s: %w", guard, err)
	}
	ignore, err := reconcile.CompileIgnoreRules(g.Spec.Ignore)
	if err != nil {
		return false, fmt.Errorf("guard %s: spec.%w", guard, err)
	}
	// The chart renders as the guard renders it: with the cluster's
	// capabilities (spec.helm.valuesFrom is read with your own rights).
	caps, err := clusterCapabilities(kubeconfig)
	if err != nil {
		return false, err
	}
	req, err := reconcile.RequestIn(ctx, c, &g, namespace, reconcile.RenderCluster{Capabilities: caps})
	if err != nil {
		return false, err
	}
	cache, err := os.MkdirTemp("", "driftguard-diff-")
	if err != nil {
		return false, err
	}
	defer os.RemoveAll(cache)
	rev, snap, err := source.New(source.NewGitFetcher(cache, logr.Discard()), cache, logr.Discard()).Fetch(ctx, req)
	if err != nil {
		return false, fmt.Errorf("revision %s: %w", rev, err)
	}
	if snap, err = apply.Decorate(c, g.Name, snap); err != nil {
		return false, err
	}
	differ, err := compareWithCluster(ctx, out, c, clusterSchemas(kubeconfig), snap, ignore)
	if err != nil {
		return differ, err
	}
	prunes, err := previewPrune(ctx, out, c, &g, namespace, snap)
	return differ || prunes, err
}

// compareWithCluster prints every object of snap that differs from the
// cluster, and the sync state of each: InSync, OutOfSync (the fields that
// differ, missing, or fields a sync would remove: the guard's own fields
// Git no longer sets) or Unknown (it cannot be read: why). An object whose
// text differs is checked with a server-side dry run, as the guard does,
// so API server defaults and normalizations are not shown as drift
// (without the right to patch, the text comparison stands).
func compareWithCluster(ctx context.Context, out io.Writer, c client.Client, sch *schemas.Cache, snap *render.Snapshot, ignore []*drift.Rule) (bool, error) {
	rev := snap.Revision
	redact.Secrets.Set(cliSecrets, snap.SensitiveValues())
	applier := &apply.Applier{Client: c, Rules: func(string) []*drift.Rule { return ignore }, Schemas: sch}
	var n syncCounts
	for _, o := range snap.Objects {
		live := &unstructured.Unstructured{}
		live.SetGroupVersionKind(o.GVK())
		where := fmt.Sprintf(" (%s:%d@%.7s)", o.Source.Path, o.Source.Line, rev)
		err := c.Get(ctx, client.ObjectKey{Namespace: o.Key.Namespace, Name: o.Key.Name}, live)
		switch {
		case meta.IsNoMatchError(err):
			fmt.Fprintf(out, "? %s%s: Unknown: the API server does not serve %s\n", o.Key.Display(), where, o.GVK().GroupVersion().WithKind(o.GVK().Kind))
			n.unknown++
			continue
		case apierrors.IsNotFound(err) || apply.IsNotFoundOrGone(err):
			fmt.Fprintf(out, "--- git: %s%s\n+++ live: missing\n", o.Key.Display(), where)
			n.outOfSync++
			continue
		case apierrors.IsForbidden(err) || apierrors.IsUnauthorized(err):
			fmt.Fprintf(out, "? %s%s: Unknown: cannot read it: %v\n", o.Key.Display(), where, err)
			n.unknown++
			continue
		case err != nil:
			return n.outOfSync > 0, fmt.Errorf("get %s: %w", o.Key, err)
		}
		opts := applier.Options(o.Obj(), live.Object)
		changes := o.Drift(live.Object, opts)
		if len(changes) > 0 && applier.DryRun(ctx, o, live) == nil {
			changes = o.Drift(live.Object, opts)
		}
		// What someone added that Git does not set, as self-heal sees it.
		changes = append(changes, drift.Additions(o.Obj().Object, live.Object, apply.FieldManager, opts)...)
		var removed []drift.Change
		if o.Obj().GetLabels()[apply.GuardLabel] != "" {
			// With GUARD only: a checkout (-f) is not decorated as a
			// Guard applies it, its label would read as removed.
			removed = reconcile.Removals(o.Obj(), live, opts)
		}
		if len(changes) > 0 {
			printChanges(out, o.Key.Display(), where, changes)
		}
		if len(removed) > 0 {
			printRemovals(out, o.Key.Display(), where, removed)
		}
		if len(changes) > 0 || len(removed) > 0 {
			n.outOfSync++
			continue
		}
		n.inSync++
	}
	if n.outOfSync == 0 && n.unknown == 0 {
		fmt.Fprintf(out, "in sync: %d objects at %.7s\n", len(snap.Objects), rev)
		return false, nil
	}
	fmt.Fprintf(out, "%d of %d objects differ from %.7s (%s)\n", n.outOfSync, len(snap.Objects), rev, n)
	return n.outOfSync > 0, nil
}

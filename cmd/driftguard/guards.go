package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/driftguard/driftguard/api/v1alpha1"
	"github.com/driftguard/driftguard/app"
)

// clusterOptions are the flags of the verbs that talk to the cluster about
// Guards (get, reconcile, suspend, resume, tree, events, logs).
type clusterOptions struct {
	kubeconfig string
	// namespace is the guard's own namespace (inventories, its pods); the
	// Guards themselves are cluster-scoped.
	namespace string
}

func (o *clusterOptions) bind(cmd *cobra.Command, guardNamespace bool) {
	cmd.Flags().StringVar(&o.kubeconfig, "kubeconfig", "", "kubeconfig of the cluster (default: $KUBECONFIG, ~/.kube/config)")
	if guardNamespace {
		cmd.Flags().StringVarP(&o.namespace, "namespace", "n", app.DefaultOptions().Namespace, "namespace the guard runs in (its inventories and pods; Guards are cluster-scoped)")
	}
}

func (o *clusterOptions) restConfig() (*rest.Config, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = o.kubeconfig
	cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{}).ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("kubeconfig: %w", err)
	}
	return cfg, nil
}

func (o *clusterOptions) client() (client.Client, error) {
	cfg, err := o.restConfig()
	if err != nil {
		return nil, err
	}
	return client.New(cfg, client.Options{Scheme: app.Scheme()})
}

// completeGuards completes the first argument of a verb with the names of
// the cluster's Guards.
func (o *clusterOptions) completeGuards(_ *cobra.Command, args []string, prefix string) ([]cobra.Completion, cobra.ShellCompDirective) {
	if len(args) > 0 {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	return o.guardNames(prefix), cobra.ShellCompDirectiveNoFileComp
}

func (o *clusterOptions) guardNames(prefix string) []cobra.Completion {
	c, err := o.client()
	if err != nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	var list v1alpha1.GuardList
	if err := c.List(ctx, &list); err != nil {
		return nil
	}
	var names []cobra.Completion
	for _, g := range list.Items {
		if strings.HasPrefix(g.Name, prefix) {
			names = append(names, g.Name)
		}
	}
	return names
}

// guardVerb is a verb whose only kind is guard: VERB guard NAME...
func guardVerb(use, short, long, example string, o *clusterOptions, run func(cmd *cobra.Command, names []string) error) *cobra.Command {
	verb := &cobra.Command{
		Use:   use + " guard NAME",
		Short: short,
		Long:  long,
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return fmt.Errorf("%s: name a kind: %s guard NAME", use, use)
		},
	}
	sub := &cobra.Command{
		Use:               "guard NAME...",
		Aliases:           []string{"guards", "gd"},
		Short:             short,
		Long:              long,
		Example:           example,
		Args:              cobra.MinimumNArgs(1),
		ValidArgsFunction: o.completeGuardsAny,
		RunE: func(cmd *cobra.Command, args []string) error {
			return run(cmd, args)
		},
	}
	verb.AddCommand(sub)
	return verb
}

// completeGuardsAny completes every argument with the Guards not named yet.
func (o *clusterOptions) completeGuardsAny(_ *cobra.Command, args []string, prefix string) ([]cobra.Completion, cobra.ShellCompDirective) {
	var out []cobra.Completion
	for _, n := range o.guardNames(prefix) {
		if !slices.Contains(args, n) {
			out = append(out, n)
		}
	}
	return out, cobra.ShellCompDirectiveNoFileComp
}

// requestReconcile sets the reconcile request annotation of a Guard (with
// the source one for withSource) and, with spec, merges spec into the
// same patch. It returns the request.
func requestReconcile(ctx context.Context, c client.Client, name string, withSource bool, spec map[string]any) (string, error) {
	request := time.Now().UTC().Format(time.RFC3339Nano)
	ann := map[string]string{v1alpha1.ReconcileRequestedAnnotation: request}
	if withSource {
		ann[v1alpha1.ReconcileSourceAnnotation] = request
	}
	body := map[string]any{"metadata": map[string]any{"annotations": ann}}
	if spec != nil {
		body["spec"] = spec
	}
	patch, err := json.Marshal(body)
	if err != nil {
		return "", err
	}
	g := &v1alpha1.Guard{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if err := c.Patch(ctx, g, client.RawPatch(types.MergePatchType, patch)); err != nil {
		return "", fmt.Errorf("guard %s: %w", name, err)
	}
	return request, nil
}

// waitReconciled waits until the guard recorded request as handled
// (status.lastHandledReconcileAt) and returns the Guard then.
func waitReconciled(ctx context.Context, c client.Client, name, request string, timeout time.Duration) (*v1alpha1.Guard, error) {
	g := &v1alpha1.Guard{}
	err := wait.PollUntilContextTimeout(ctx, 300*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		if err := c.Get(ctx, client.ObjectKey{Name: name}, g); err != nil {
			return false, fmt.Errorf("guard %s: %w", name, err)
		}
		return g.Status.LastHandledReconcileAt == request, nil
	})
	if err != nil {
		return nil, fmt.Errorf("guard %s did not handle the reconcile request %s within %s (--timeout): %w", name, request, timeout, err)
	}
	return g, nil
}

// printResult prints what a handled request left: the revision, the
// Ready condition, health and drift. It reports whether the Guard is Ready.
func printResult(out io.Writer, g *v1alpha1.Guard) bool {
	ready := meta.FindStatusCondition(g.Status.Conditions, v1alpha1.ConditionReady)
	rev := orDash(g.Status.LastAppliedRevision)
	if ready == nil {
		fmt.Fprintf(out, "guard %s: revision %s, Ready unknown (no Ready condition)\n", g.Name, rev)
		return false
	}
	fmt.Fprintf(out, "guard %s: revision %s, Ready=%s %s: %s\n", g.Name, rev, ready.Status, ready.Reason, ready.Message)
	fmt.Fprintf(out, "  health %s, %d of %d objects drifted", orDash(g.Status.Health), g.Status.DriftedObjects, g.Status.ManagedObjects)
	if g.Status.PendingRevision != "" {
		fmt.Fprintf(out, ", revision %s pending", g.Status.PendingRevision)
	}
	fmt.Fprintln(out)
	return ready.Status == metav1.ConditionTrue
}

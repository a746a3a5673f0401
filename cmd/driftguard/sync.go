package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/driftguard/driftguard/api/v1alpha1"
)

type syncOptions struct {
	kubeconfig string
	wait       bool
	timeout    time.Duration
}

func newSyncCommand() *cobra.Command {
	o := &syncOptions{}
	cmd := &cobra.Command{
		Use:   "sync GUARD",
		Short: "Apply the newest revision of a Guard now (manual sync)",
		Long: `sync asks the guard to apply the newest revision of a Guard's source now:
the way to approve a revision of a Guard with spec.sync: manual, and to pass
a sync window that has manualSync: true. It sets the annotation
driftguard.io/sync-requested on the Guard to the current time; the guard
reconciles at once and records the request as handled in
status.lastHandledSyncRequest.

With --wait, sync waits until the request is handled and prints the revision
in force; the exit code is 1 when the Guard is not Ready afterwards.`,
		Example: `  driftguard sync shop --wait`,
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ok, err := runSync(cmd.Context(), cmd.OutOrStdout(), args[0], o)
			if err == nil && !ok {
				return exitCode(1)
			}
			return err
		},
	}
	cmd.Flags().StringVar(&o.kubeconfig, "kubeconfig", "", "kubeconfig of the cluster (default: $KUBECONFIG, ~/.kube/config)")
	cmd.Flags().BoolVar(&o.wait, "wait", false, "wait until the guard handled the request")
	cmd.Flags().DurationVar(&o.timeout, "timeout", 2*time.Minute, "how long --wait waits")
	return cmd
}

func runSync(ctx context.Context, out io.Writer, guard string, o *syncOptions) (bool, error) {
	c, err := clusterClient(o.kubeconfig)
	if err != nil {
		return false, err
	}
	request := time.Now().UTC().Format(time.RFC3339Nano)
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]string{v1alpha1.SyncRequestedAnnotation: request}}})
	if err != nil {
		return false, err
	}
	g := &v1alpha1.Guard{ObjectMeta: metav1.ObjectMeta{Name: guard}}
	if err := c.Patch(ctx, g, client.RawPatch(types.MergePatchType, patch)); err != nil {
		return false, fmt.Errorf("guard %s: %w", guard, err)
	}
	fmt.Fprintf(out, "sync of guard %s requested (%s)\n", guard, request)
	if !o.wait {
		return true, nil
	}
	err = wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, o.timeout, true, func(ctx context.Context) (bool, error) {
		if err := c.Get(ctx, client.ObjectKey{Name: guard}, g); err != nil {
			return false, err
		}
		return g.Status.LastHandledSyncRequest == request, nil
	})
	if err != nil {
		return false, fmt.Errorf("guard %s did not handle the sync request within %s: %w", guard, o.timeout, err)
	}
	ready := meta.FindStatusCondition(g.Status.Conditions, v1alpha1.ConditionReady)
	if ready == nil {
		return false, nil
	}
	fmt.Fprintf(out, "guard %s: revision %s, Ready=%s %s: %s\n", guard, g.Status.LastAppliedRevision, ready.Status, ready.Reason, ready.Message)
	return ready.Status == metav1.ConditionTrue, nil
}

package main

import (
	"github.com/spf13/cobra"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/driftguard/driftguard/app"
)

func newRunCommand(logs *logOptions) *cobra.Command {
	opts := app.DefaultOptions()
	var kubeconfig, memoryLimit string
	cmd := &cobra.Command{
		Use:   "run",
		Short: "Run the guard: reconcile Guards, watch for drift, serve the admission webhook",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			log := logs.logger()
			if _, err := app.SetMemoryLimit(memoryLimit, log); err != nil {
				return err
			}
			rules := clientcmd.NewDefaultClientConfigLoadingRules()
			rules.ExplicitPath = kubeconfig
			cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{}).ClientConfig()
			if err != nil {
				return err
			}
			return app.Run(cmd.Context(), cfg, opts, log, cmd.OutOrStdout())
		},
	}
	cmd.Flags().StringVar(&kubeconfig, "kubeconfig", "", "kubeconfig file (default: in-cluster, then $KUBECONFIG, then ~/.kube/config)")
	cmd.Flags().StringVar(&memoryLimit, "memory-limit", "", "soft memory limit of the Go runtime, e.g. 128Mi (default: GOMEMLIMIT, else 90% of the container's memory limit)")
	opts.BindFlags(cmd.Flags())
	return cmd
}

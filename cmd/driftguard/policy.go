package main

import (
	"encoding/json"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/driftguard/driftguard/policy"
)

func newPolicyCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "policy",
		Short: "Write and test Rego policies",
	}
	cmd.AddCommand(newPolicyEvalCommand(), newPolicyTestCommand())
	return cmd
}

func newPolicyEvalCommand() *cobra.Command {
	var dir, input string
	cmd := &cobra.Command{
		Use:   "eval --input FILE [--policy DIR]",
		Short: "Print the decision a policy makes for one input (JSON or YAML)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if input == "" {
				return fmt.Errorf("--input is required")
			}
			d, err := policy.EvalFile(cmd.Context(), dir, input)
			if err != nil {
				return err
			}
			enc := json.NewEncoder(cmd.OutOrStdout())
			enc.SetIndent("", "  ")
			return enc.Encode(d)
		},
	}
	cmd.Flags().StringVar(&dir, "policy", "", "folder of Rego files (default: the built-in policy)")
	cmd.Flags().StringVar(&input, "input", "", "input document, shaped as in docs/policy.md")
	return cmd
}

func newPolicyTestCommand() *cobra.Command {
	var verbose bool
	cmd := &cobra.Command{
		Use:   "test DIR",
		Short: "Run the Rego unit tests (rules named test_*) in DIR",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			_, failed, err := policy.Test(cmd.Context(), args[0], cmd.OutOrStdout(), verbose)
			if err != nil {
				return err
			}
			if failed > 0 {
				return exitCode(1)
			}
			return nil
		},
	}
	cmd.Flags().BoolVarP(&verbose, "verbose", "v", false, "print every test, not only failures")
	return cmd
}

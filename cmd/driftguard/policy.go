package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"

	"github.com/go-logr/logr"
	"github.com/open-policy-agent/opa/v1/format"

	"github.com/spf13/cobra"

	"github.com/driftguard/driftguard/policy"
)

func newPolicyCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "policy",
		Short: "Write and test Rego policies",
	}
	cmd.AddCommand(newPolicyEvalCommand(), newPolicyTestCommand(), newPolicyCheckCommand(), newPolicyFmtCommand(), newPolicyReplayCommand())
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

func newPolicyCheckCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "check DIR",
		Short: "Compile the policy in DIR as the guard would; errors name file:line:col",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			e := policy.NewEngine(policy.Config{}, logr.Discard())
			if err := e.LoadDir(args[0]); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "ok: policy revision %s\n", e.Revision())
			return nil
		},
	}
}

func newPolicyFmtCommand() *cobra.Command {
	var write bool
	cmd := &cobra.Command{
		Use:   "fmt FILE...",
		Short: "Format Rego files; lists files that need it, or rewrites them with -w",
		Args:  cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			unformatted := 0
			for _, path := range args {
				src, err := os.ReadFile(path)
				if err != nil {
					return err
				}
				out, err := format.Source(path, src)
				if err != nil {
					return fmt.Errorf("format %s: %w", path, err)
				}
				if bytes.Equal(src, out) {
					continue
				}
				if write {
					if err := os.WriteFile(path, out, 0o644); err != nil {
						return err
					}
					continue
				}
				unformatted++
				fmt.Fprintln(cmd.OutOrStdout(), path)
			}
			if unformatted > 0 {
				return exitCode(1)
			}
			return nil
		},
	}
	cmd.Flags().BoolVarP(&write, "write", "w", false, "rewrite the files instead of listing them")
	return cmd
}

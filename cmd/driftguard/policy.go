package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/go-logr/logr"
	"github.com/open-policy-agent/opa/v1/format"

	"github.com/spf13/cobra"

	"github.com/driftguard/driftguard/compiled"
	"github.com/driftguard/driftguard/decision"
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
	var cfg policy.Config
	cmd := &cobra.Command{
		Use:   "eval --input FILE [--policy DIR] [--guard-users U,...] [--break-glass-groups G,...]",
		Short: "Print the decision a policy makes for one input (JSON or YAML), enforcement applied",
		Long: `eval decides one input as the guard does (package decision): the object's
driftguard.io/enforcement annotation in input.desired and the Guard's mode in
input.guardSpec.enforcement are applied to the policy's decision; the output
has the policy's own action in policyAction when they changed it, and
"temporary": true when the change is kept only for the Guard's breakGlassTTL.
--guard-users and --break-glass-groups are the guard's configuration, as
the flags of driftguard run of the same names give it, so a break-glass or
guard-identity decision can be tried.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if input == "" {
				return fmt.Errorf("--input is required")
			}
			r, err := evalFile(cmd.Context(), dir, input, cfg)
			if err != nil {
				return err
			}
			enc := json.NewEncoder(cmd.OutOrStdout())
			enc.SetIndent("", "  ")
			return enc.Encode(r)
		},
	}
	cmd.Flags().StringVar(&dir, "policy", "", "folder of Rego files (default: the built-in policy)")
	cmd.Flags().StringVar(&input, "input", "", "input document, shaped as in docs/policy.md")
	cmd.Flags().StringSliceVar(&cfg.GuardUsers, "guard-users", nil, "the guard's identities (data.driftguard.config.guardUsers), as driftguard run --guard-users plus its own")
	cmd.Flags().StringSliceVar(&cfg.BreakGlassGroups, "break-glass-groups", nil, "groups that may break glass (data.driftguard.config.breakGlassGroups), as driftguard run --break-glass-groups")
	return cmd
}

// evalFile decides the input in inputFile with the policy in dir (the
// built-in one when empty) and the guard's configuration cfg, as the guard
// decides.
func evalFile(ctx context.Context, dir, inputFile string, cfg policy.Config) (decision.Result, error) {
	in, err := policy.ReadInput(inputFile)
	if err != nil {
		return decision.Result{}, err
	}
	e := policy.NewEngine(cfg, logr.Discard())
	if dir != "" {
		if err := e.LoadDir(dir); err != nil {
			return decision.Result{}, err
		}
	}
	r, err := decision.New(e, nil).DecideInput(ctx, in, decision.EnforcementOf(in))
	if err != nil {
		return decision.Result{}, fmt.Errorf("eval %s: %w", inputFile, err)
	}
	return r, nil
}

func newPolicyTestCommand() *cobra.Command {
	var verbose bool
	cmd := &cobra.Command{
		Use:   "test DIR",
		Short: "Run the Rego unit tests (rules named test_*) in DIR; a folder of policies, each folder on its own",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			bundles, err := policy.Bundles(args[0])
			if err != nil {
				return err
			}
			if len(bundles) == 0 {
				return fmt.Errorf("policy test: no Rego files below %s", args[0])
			}
			failed := 0
			for _, b := range bundles {
				if len(bundles) > 1 {
					fmt.Fprintf(cmd.OutOrStdout(), "== %s\n", b)
				}
				_, f, err := policy.Test(cmd.Context(), b, cmd.OutOrStdout(), verbose)
				if err != nil {
					return err
				}
				failed += f
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
			out := cmd.OutOrStdout()
			fmt.Fprintf(out, "ok: policy revision %s\n", e.Revision())
			modules, err := regoFiles(args[0])
			if err != nil {
				return err
			}
			fmt.Fprintln(out, "\nin the API server (--admission-mode=both or compiled):")
			if !policy.IsDefault(modules) {
				fmt.Fprintln(out, "  not compiled: a custom policy is decided by the webhook alone (the compiled policies are removed)")
				return nil
			}
			for _, r := range compiled.DefaultRules() {
				where := "webhook  "
				if r.Compiled {
					where = "compiled "
				}
				fmt.Fprintf(out, "  %s %-18s %s\n", where, r.Rule, r.How)
			}
			return nil
		},
	}
}

// regoFiles reads the policy files of dir (tests aside), as the guard loads them.
func regoFiles(dir string) (map[string]string, error) {
	paths, err := filepath.Glob(filepath.Join(dir, "*.rego"))
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	for _, p := range paths {
		if strings.HasSuffix(p, "_test.rego") {
			continue
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return nil, err
		}
		out[filepath.Base(p)] = string(b)
	}
	return out, nil
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

package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/util/duration"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/driftguard/driftguard/api/v1alpha1"
)

type getOptions struct {
	clusterOptions
	output        string
	allNamespaces bool
}

func newGetCommand() *cobra.Command {
	o := &getOptions{}
	get := &cobra.Command{
		Use:   "get guards [NAME...]",
		Short: "List Guards with their readiness, revision, health, drift and sync state",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return fmt.Errorf("get: name a kind: get guards [NAME...]")
		},
	}
	guards := &cobra.Command{
		Use:     "guards [NAME...]",
		Aliases: []string{"guard", "gd"},
		Short:   "List Guards with their readiness, revision, health, drift and sync state",
		Long: `get guards prints one line per Guard: the columns of kubectl get guards
(READY, REVISION, HEALTH, DRIFT, AGE) and SYNC (managed objects in sync
with Git / all the status counts) and SUSPENDED; -o wide adds the
pending revision and the Ready message. -o json and -o yaml print the
Guards as the API server returns them (a List without NAME).

Guards are cluster-scoped: there is no --namespace; -A is accepted, out
of the habit flux get gives, and changes nothing.`,
		Example: `  driftguard get guards
  driftguard get guard shop -o yaml`,
		ValidArgsFunction: o.completeGuardsAny,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runGetGuards(cmd.Context(), cmd.OutOrStdout(), o, args)
		},
	}
	o.bind(guards, false)
	guards.Flags().StringVarP(&o.output, "output", "o", "", "output format: wide, json or yaml (default: a table)")
	guards.Flags().BoolVarP(&o.allNamespaces, "all-namespaces", "A", false, "accepted for flux's habit; Guards are cluster-scoped and all are listed")
	get.AddCommand(guards)
	return get
}

func runGetGuards(ctx context.Context, out io.Writer, o *getOptions, names []string) error {
	switch o.output {
	case "", "wide", "json", "yaml":
	default:
		return fmt.Errorf("--output %q: want wide, json or yaml", o.output)
	}
	c, err := o.client()
	if err != nil {
		return err
	}
	var guards []v1alpha1.Guard
	if len(names) == 0 {
		var list v1alpha1.GuardList
		if err := c.List(ctx, &list); err != nil {
			return fmt.Errorf("list guards: %w", err)
		}
		guards = list.Items
	}
	for _, n := range names {
		var g v1alpha1.Guard
		if err := c.Get(ctx, client.ObjectKey{Name: n}, &g); err != nil {
			return fmt.Errorf("guard %s: %w", n, err)
		}
		guards = append(guards, g)
	}
	switch o.output {
	case "json", "yaml":
		var doc any
		if len(names) == 1 {
			g := guards[0]
			g.APIVersion, g.Kind = v1alpha1.GroupVersion.String(), "Guard"
			doc = &g
		} else {
			for i := range guards {
				guards[i].APIVersion, guards[i].Kind = v1alpha1.GroupVersion.String(), "Guard"
			}
			doc = map[string]any{"apiVersion": "v1", "kind": "List", "items": guards}
		}
		var b []byte
		if o.output == "json" {
			b, err = json.MarshalIndent(doc, "", "    ")
			b = append(b, '\n')
		} else {
			b, err = yaml.Marshal(doc)
		}
		if err != nil {
			return fmt.Errorf("encode guards: %w", err)
		}
		_, err = out.Write(b)
		return err
	}
	if len(guards) == 0 {
		fmt.Fprintln(out, "No Guards found.")
		return nil
	}
	return printGuardTable(out, guards, o.output == "wide", time.Now())
}

// printGuardTable prints the table of get guards.
func printGuardTable(out io.Writer, guards []v1alpha1.Guard, wide bool, now time.Time) error {
	tw := tabwriter.NewWriter(out, 0, 8, 3, ' ', 0)
	fmt.Fprintf(tw, "NAME\tREADY\tREVISION\tHEALTH\tDRIFT\tSYNC\tSUSPENDED\tAGE")
	if wide {
		fmt.Fprintf(tw, "\tPENDING\tSTATUS")
	}
	fmt.Fprintln(tw)
	for i := range guards {
		g := &guards[i]
		ready, msg := "Unknown", ""
		if c := meta.FindStatusCondition(g.Status.Conditions, v1alpha1.ConditionReady); c != nil {
			ready, msg = string(c.Status), c.Message
		}
		age := "<unknown>"
		if !g.CreationTimestamp.IsZero() {
			age = duration.HumanDuration(now.Sub(g.CreationTimestamp.Time))
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%s\t%s\t%s", g.Name, ready, orDash(g.Status.LastAppliedRevision), orDash(g.Status.Health),
			g.Status.DriftedObjects, syncColumn(g.Status.Sync), strconv.FormatBool(g.Spec.Suspend), age)
		if wide {
			fmt.Fprintf(tw, "\t%s\t%s", orDash(g.Status.PendingRevision), msg)
		}
		fmt.Fprintln(tw)
	}
	return tw.Flush()
}

// syncColumn is "IN/ALL" of the sync summary, "-" before the guard
// compared anything.
func syncColumn(s *v1alpha1.SyncSummary) string {
	if s == nil {
		return "-"
	}
	return fmt.Sprintf("%d/%d", s.InSync, s.InSync+s.OutOfSync+s.Unknown)
}

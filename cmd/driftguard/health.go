package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing/fstest"
	"text/tabwriter"

	"github.com/go-logr/logr"
	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/driftguard/driftguard/health"
	"github.com/driftguard/driftguard/policy"
	"github.com/driftguard/driftguard/render"
)

// healthOptions are the flags of driftguard health.
type healthOptions struct {
	file           string
	policyDir      string
	failOnDegraded bool
}

func newHealthCommand() *cobra.Command {
	var o healthOptions
	cmd := &cobra.Command{
		Use:   "health -f FILE [--policy DIR] [--fail-on-degraded]",
		Short: "Print the health of live objects read from a file (kubectl get -o yaml)",
		Long: `health reads live objects from FILE (YAML or JSON: several documents, or a
List as kubectl get -o yaml prints it; - reads standard input) and prints one
line per object: kind, namespace/name, state and a message. EndpointSlices in
the same file count as the endpoints of their Service. --policy loads custom
health rules (Rego, data.driftguard.health) from DIR; see docs/health.md.

Health is informational: the exit status is 0 whatever the states, unless
--fail-on-degraded is given and an object is Degraded (then 1).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runHealth(cmd.Context(), o, cmd.InOrStdin(), cmd.OutOrStdout(), cmd.ErrOrStderr())
		},
	}
	cmd.Flags().StringVarP(&o.file, "filename", "f", "", "file of live objects (- for standard input)")
	cmd.Flags().StringVar(&o.policyDir, "policy", "", "folder of Rego files with custom health rules")
	cmd.Flags().BoolVar(&o.failOnDegraded, "fail-on-degraded", false, "exit with status 1 when an object is Degraded")
	return cmd
}

func runHealth(ctx context.Context, o healthOptions, stdin io.Reader, stdout, stderr io.Writer) error {
	if o.file == "" {
		return errors.New("health: -f FILE is required")
	}
	var custom health.Custom
	if o.policyDir != "" {
		engine, err := policy.LoadHealthDir(o.policyDir, logr.Discard())
		if err != nil {
			return fmt.Errorf("health: --policy: %w", err)
		}
		custom = engine
	}
	var (
		data []byte
		err  error
	)
	if o.file == "-" {
		data, err = io.ReadAll(stdin)
	} else {
		data, err = os.ReadFile(o.file)
	}
	if err != nil {
		return fmt.Errorf("health: read %s: %w", o.file, err)
	}
	objs, err := decodeLiveObjects(o.file, data)
	if err != nil {
		return fmt.Errorf("health: %w", err)
	}
	if len(objs) == 0 {
		return fmt.Errorf("health: %s holds no objects", o.file)
	}

	lookup := health.Objects(objs)
	tw := tabwriter.NewWriter(stdout, 0, 8, 2, ' ', 0)
	degraded := false
	for _, obj := range objs {
		r, err := health.AssessCustom(ctx, obj, lookup, custom)
		if err != nil {
			fmt.Fprintf(stderr, "driftguard: %v\n", err)
		}
		degraded = degraded || r.State == health.Degraded
		name := obj.GetName()
		if ns := obj.GetNamespace(); ns != "" {
			name = ns + "/" + name
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", obj.GetKind(), name, r.State, r.Message)
	}
	if err := tw.Flush(); err != nil {
		return fmt.Errorf("health: write: %w", err)
	}
	if o.failOnDegraded && degraded {
		return exitCode(1)
	}
	return nil
}

// decodeLiveObjects decodes the objects of file (YAML documents, JSON when
// file ends in .json, Lists expanded to their items) with the manifest
// reader of package render, so that a live file is read as a Git one is. Errors
// name file and line.
func decodeLiveObjects(file string, data []byte) ([]*unstructured.Unstructured, error) {
	name := "objects.yaml"
	if strings.EqualFold(filepath.Ext(file), ".json") {
		name = "objects.json"
	}
	rendered, err := render.Render(fstest.MapFS{name: {Data: data}}, name, render.Source{})
	if err != nil {
		var re *render.RenderError
		if errors.As(err, &re) {
			re.Path = file
			return nil, re
		}
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	objs := make([]*unstructured.Unstructured, len(rendered))
	for i, o := range rendered {
		objs[i] = o.Obj()
	}
	return objs, nil
}

package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"
	yamlv3 "go.yaml.in/yaml/v3"
	"sigs.k8s.io/yaml"

	"github.com/driftguard/driftguard/drift"
	"github.com/driftguard/driftguard/reconcile"
	"github.com/driftguard/driftguard/redact"
)

func newDiffCommand() *cobra.Command {
	var desiredFile, liveFile, ignoreFile, kubeconfig, namespace, dir string
	cmd := &cobra.Command{
		Use:   "diff (GUARD | -f DIR [--ignore RULES] | --desired FILE --live FILE [--ignore RULES])",
		Short: "Show the fields where a live object differs from Git, as the guard sees them",
		Long: `diff compares one object from Git (--desired) with the same object as the
cluster holds it (--live, for example kubectl get -o yaml), with the comparison
the guard itself uses, and prints the fields that differ. Secret values are
redacted. --ignore takes a YAML list of ignore rules, written as in a Guard's
spec.ignore.

With a GUARD name instead, diff reads that Guard from the cluster
(--kubeconfig), fetches and renders its Git source as the guard does, and
compares every object with the cluster, with the Guard's ignore rules. Each
object is InSync, OutOfSync (the fields that differ, "missing", or the
fields a sync would remove: the guard's own, which Git no longer sets) or
Unknown (it cannot be read: its kind is not served, or you may not read
it), as in the Guard's status.sync. It also lists the objects a sync would
prune (its inventory's objects that left Git, with spec.prune) and those
that carry its label without being its own (never pruned).
With -f DIR it compares the manifests of a local checkout with the cluster,
to see what a commit would change before pushing it.

Exit status: 0 in sync, 1 when fields differ (or a sync would prune), 2 when an
input is bad.`,
		Args: cobra.MaximumNArgs(1),
		// Differences are a result, not a usage error.
		SilenceUsage:  true,
		SilenceErrors: true,
		RunE: func(cmd *cobra.Command, args []string) error {
			var differ bool
			var err error
			// What diff prints is scrubbed of the secret values of what it
			// rendered (registered by compareWithCluster).
			out, errOut := redact.Secrets.Writer(cmd.OutOrStdout()), redact.Secrets.Writer(cmd.ErrOrStderr())
			switch {
			case len(args) == 1:
				differ, err = runGuardDiff(cmd.Context(), out, kubeconfig, args[0], namespace)
			case dir != "":
				differ, err = runDirDiff(cmd.Context(), out, kubeconfig, dir, ignoreFile)
			default:
				differ, err = runDiff(out, errOut, desiredFile, liveFile, ignoreFile)
			}
			if err != nil {
				fmt.Fprintln(errOut, "driftguard diff:", err)
				return exitCode(2)
			}
			if differ {
				return exitCode(1)
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&desiredFile, "desired", "", "the object as Git declares it (YAML or JSON)")
	cmd.Flags().StringVar(&liveFile, "live", "", "the object as the cluster holds it (YAML or JSON)")
	cmd.Flags().StringVarP(&dir, "filename", "f", "", "folder of manifests (a local checkout) to compare with the cluster")
	cmd.Flags().StringVar(&kubeconfig, "kubeconfig", "", "kubeconfig of the cluster, with GUARD (default: $KUBECONFIG, ~/.kube/config)")
	cmd.Flags().StringVar(&namespace, "namespace", "driftguard-system", "the guard's namespace, where Git credentials are looked up, with GUARD")
	cmd.Flags().StringVar(&ignoreFile, "ignore", "", "YAML list of ignore rules (group, kind, namespace, name, jsonPointers, jqPathExpressions, managedFieldsManagers)")
	return cmd
}

// runDiff prints the differences and reports whether there are any.
func runDiff(out, errOut io.Writer, desiredFile, liveFile, ignoreFile string) (bool, error) {
	if desiredFile == "" || liveFile == "" {
		return false, errors.New("--desired and --live are required")
	}
	desired, err := readObject(desiredFile)
	if err != nil {
		return false, err
	}
	live, err := readObject(liveFile)
	if err != nil {
		return false, err
	}
	var rules []*drift.Rule
	if ignoreFile != "" {
		if rules, err = reconcile.ReadIgnoreFile(ignoreFile); err != nil {
			return false, err
		}
	}
	id := identify(desired)
	if lid := identify(live); lid.kind != id.kind || lid.name != id.name || (id.namespace != "" && lid.namespace != "" && lid.namespace != id.namespace) {
		return false, fmt.Errorf("%s holds %s but %s holds %s: not the same object", desiredFile, id, liveFile, lid)
	}
	if err := drift.Check(rules, id.group, id.kind, id.namespace, id.name, desired); err != nil {
		for _, e := range drift.RuleErrors(err) {
			fmt.Fprintf(errOut, "warning: %s: %v (hides nothing)\n", ignoreFile, e)
		}
	}
	changes := drift.Compare(desired, live, drift.For(rules, id.group, id.kind, id.namespace, id.name, live))
	if len(changes) == 0 {
		fmt.Fprintln(out, "in sync")
		return false, nil
	}
	printChanges(out, id.String(), "", changes)
	return true, nil
}

// printChanges prints one object's differing fields like a unified diff.
func printChanges(out io.Writer, object, where string, changes []drift.Change) {
	fmt.Fprintf(out, "--- git: %s%s\n+++ live\n", object, where)
	for _, c := range changes {
		liveValue := "(missing)"
		if !c.Missing {
			liveValue = jsonText(c.Live)
		}
		gitValue := jsonText(c.Desired)
		if c.Added {
			gitValue = "(not in Git)"
		}
		fmt.Fprintf(out, "  %s: -%s +%s\n", c.Path, gitValue, liveValue)
	}
	if len(changes) == 1 {
		fmt.Fprintln(out, "1 field differs")
	} else {
		fmt.Fprintf(out, "%d fields differ\n", len(changes))
	}
}

type objectID struct{ group, kind, namespace, name string }

func identify(obj map[string]any) objectID {
	apiVersion, _ := obj["apiVersion"].(string)
	group, _, found := strings.Cut(apiVersion, "/")
	if !found {
		group = "" // the core group: "v1"
	}
	kind, _ := obj["kind"].(string)
	md, _ := obj["metadata"].(map[string]any)
	ns, _ := md["namespace"].(string)
	name, _ := md["name"].(string)
	return objectID{group: group, kind: kind, namespace: ns, name: name}
}

func (id objectID) String() string {
	if id.namespace == "" {
		return id.kind + " " + id.name
	}
	return id.kind + " " + id.namespace + "/" + id.name
}

func jsonText(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}

// readObject reads one Kubernetes object from a YAML or JSON file, with
// numbers as unstructured objects hold them (int64 when integral, else
// float64).
func readObject(file string) (map[string]any, error) {
	b, err := os.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("read object: %w", err)
	}
	if n, err := countDocuments(b); err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	} else if n != 1 {
		return nil, fmt.Errorf("%s: holds %d objects; diff compares one", file, n)
	}
	j, err := yaml.YAMLToJSON(b)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	dec := json.NewDecoder(bytes.NewReader(j))
	dec.UseNumber()
	var obj map[string]any
	if err := dec.Decode(&obj); err != nil || obj == nil {
		return nil, fmt.Errorf("%s: not an object (a YAML or JSON mapping with apiVersion, kind and metadata)", file)
	}
	if kind, _ := obj["kind"].(string); kind == "" {
		return nil, fmt.Errorf("%s: the object has no kind", file)
	} else if _, items := obj["items"].([]any); items && strings.HasSuffix(kind, "List") {
		return nil, fmt.Errorf("%s: holds a %s; diff compares one object", file, kind)
	}
	return drift.JSONNumbers(obj).(map[string]any), nil
}

// countDocuments counts the non-empty YAML documents in b, so that a file
// with several objects is an error rather than silently its first one.
func countDocuments(b []byte) (int, error) {
	dec := yamlv3.NewDecoder(bytes.NewReader(b))
	n := 0
	for {
		var doc yamlv3.Node
		err := dec.Decode(&doc)
		if errors.Is(err, io.EOF) {
			return n, nil
		}
		if err != nil {
			return n, err
		}
		if len(doc.Content) > 0 && doc.Content[0].Tag != "!!null" {
			n++
		}
	}
}

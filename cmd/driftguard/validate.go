package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/sets"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/spf13/cobra"

	"github.com/driftguard/driftguard/api/v1alpha1"
	"github.com/driftguard/driftguard/apply"
	"github.com/driftguard/driftguard/reconcile"
	"github.com/driftguard/driftguard/redact"
	"github.com/driftguard/driftguard/render"
)

// validateOptions are the flags of driftguard validate.
type validateOptions struct {
	vars           []string
	varsFiles      []string
	helmValues     []string
	releaseName    string
	releaseNS      string
	ageKeyFiles    []string
	guard          string
	kubeconfig     string
	guardNamespace string
	limits         render.Limits
}

func newValidateCommand() *cobra.Command {
	o := &validateOptions{limits: render.DefaultLimits()}
	cmd := &cobra.Command{
		Use:   "validate [PATH]",
		Short: "Render a local checkout as the guard would and report every problem with file and line",
		Long: `validate renders PATH (default: the current folder) of a local Git checkout
exactly as a Guard renders its path: plain YAML, Kustomize, a Helm chart,
SOPS decryption and ${VAR} substitution. It reports every problem it finds,
one per line as FILE:LINE: message, with paths relative to the repository
root: files that do not parse, unset variables, files that cannot be
decrypted, templates that fail, duplicate objects.

With --kubeconfig it also asks the cluster: kinds it does not know (unless a
CustomResourceDefinition in the same render defines them) and objects the
API server rejects in a server-side dry run (nothing is changed).

With --guard NAME (and --kubeconfig) the render settings come from that
Guard: its path, vars and varsFrom (read from the cluster), helm and
decryption (the age keys of its Secret). Flags given as well are applied
over them: --vars-file after the Guard's variables, --vars last.

Exit status: 0 without problems, 1 when there are problems, 2 when
validate cannot run (bad flags, unreachable cluster).`,
		Args:          cobra.MaximumNArgs(1),
		SilenceUsage:  true,
		SilenceErrors: true,
		RunE: func(cmd *cobra.Command, args []string) error {
			dir := "."
			if len(args) == 1 {
				dir = args[0]
			}
			// What validate prints is scrubbed of the secret values of
			// what it rendered (the cluster's dry-run errors quote values).
			problems, err := runValidate(cmd.Context(), redact.Secrets.Writer(cmd.OutOrStdout()), dir, o)
			if err != nil {
				fmt.Fprintln(redact.Secrets.Writer(cmd.ErrOrStderr()), "driftguard validate:", err)
				return exitCode(2)
			}
			if problems > 0 {
				return exitCode(1)
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.StringArrayVar(&o.vars, "vars", nil, "a substitution variable NAME=VALUE (repeatable); turns substitution on")
	f.StringArrayVar(&o.varsFiles, "vars-file", nil, "a YAML or JSON map of substitution variables (repeatable, later files win); turns substitution on")
	f.StringArrayVar(&o.helmValues, "helm-values", nil, "a Helm values file, relative to the chart folder as in spec.helm.valuesFiles (repeatable, in order)")
	f.StringVar(&o.releaseName, "release-name", "", "Helm release name (default: the Guard's name, or "+render.DefaultReleaseName+")")
	f.StringVar(&o.releaseNS, "release-namespace", "", "Helm release namespace (default: the Guard's spec.helm.namespace, or default)")
	f.StringArrayVar(&o.ageKeyFiles, "age-key-file", nil, "a file of age identities (age-keygen output) that decrypts SOPS files (repeatable)")
	f.StringVar(&o.guard, "guard", "", "take the render settings from this Guard in the cluster (needs --kubeconfig or $KUBECONFIG)")
	f.StringVar(&o.kubeconfig, "kubeconfig", "", "kubeconfig of a cluster to check kinds and dry-run objects against")
	f.StringVar(&o.guardNamespace, "namespace", "driftguard-system", "the guard's namespace, where varsFrom and Secrets without a namespace are looked up, with --guard")
	// The guard's --render-* limits, to check a revision as a guard run
	// with other limits would.
	o.limits.BindFlags(f)
	return cmd
}

// problem is one finding of validate.
type problem struct {
	path string
	line int
	msg  string
}

func (p problem) String() string {
	switch {
	case p.path == "":
		return p.msg
	case p.line > 0:
		return fmt.Sprintf("%s:%d: %s", p.path, p.line, p.msg)
	}
	return fmt.Sprintf("%s: %s", p.path, p.msg)
}

// runValidate prints every problem of the render of dir and returns how
// many there are; an error means validate could not run.
func runValidate(ctx context.Context, out io.Writer, dir string, o *validateOptions) (int, error) {
	root, rel, err := repositoryRoot(dir)
	if err != nil {
		return 0, err
	}
	var c client.Client
	if o.kubeconfig != "" || o.guard != "" {
		if c, err = clusterClient(o.kubeconfig); err != nil {
			return 0, fmt.Errorf("cluster: %w", err)
		}
	}
	opts, guard, err := o.renderOptions(ctx, c)
	if err != nil {
		return 0, err
	}
	if guard != nil {
		rel = sourcePath(guard)
	}

	// The checkout is read as the guard reads Git: symbolic links are not
	// followed, so no file outside it is read.
	fsys, err := render.OpenLocalFS(root)
	if err != nil {
		return 0, err
	}
	defer func() { _ = fsys.Close() }()
	var problems []problem
	objs, err := render.RenderAll(fsys, rel, render.Source{URL: root, Revision: "local"}, opts)
	registerSecrets(objs)
	problems = append(problems, renderProblems(err)...)
	if err != nil && len(problems) == 0 {
		return 0, err // not a problem of the files: a bad key or variable name
	}
	snap, err := render.NewSnapshot(root, "local", objs)
	if err != nil {
		problems = append(problems, renderProblems(err)...)
		snap = nil
	}
	// Sync waves and hooks the guard could not read (docs/reconciliation.md).
	if _, err := reconcile.PlanSync(objs); err != nil {
		problems = append(problems, renderProblems(err)...)
	}
	if c != nil && snap != nil {
		guardName := ""
		if guard != nil {
			guardName = guard.Name
		}
		cp, err := clusterProblems(ctx, c, snap, guardName, guard != nil && guard.Spec.CreateNamespace)
		if err != nil {
			return 0, err
		}
		problems = append(problems, cp...)
	}

	where := filepath.Join(root, rel)
	if len(problems) > 0 {
		printProblems(out, problems, where)
		return len(problems), nil
	}
	checked := ""
	if c != nil {
		checked = ", accepted by the cluster in a dry run"
	}
	fmt.Fprintf(out, "ok: %d %s in %s%s\n", len(objs), plural(len(objs), "object", "objects"), where, checked)
	return 0, nil
}

// sourcePath is the folder of its source a Guard renders.
func sourcePath(guard *v1alpha1.Guard) string {
	switch s := &guard.Spec; {
	case s.Git != nil:
		return s.Git.Path
	case s.OCI != nil:
		return s.OCI.Path
	case s.Bucket != nil:
		return s.Bucket.Prefix
	}
	return ""
}

// printProblems prints problems, files in path order, lines in order
// (duplicates and cluster findings keep their place after the file's own
// problems), and how many there are in where.
func printProblems(out io.Writer, problems []problem, where string) {
	slices.SortStableFunc(problems, func(a, b problem) int {
		if c := strings.Compare(a.path, b.path); c != 0 {
			return c
		}
		return a.line - b.line
	})
	for _, p := range problems {
		fmt.Fprintln(out, p)
	}
	fmt.Fprintf(out, "%d %s in %s\n", len(problems), plural(len(problems), "problem", "problems"), where)
}

// repositoryRoot finds the Git checkout that holds dir (the nearest folder
// with a .git) and returns it with dir relative to it, so that Kustomize
// bases and values files elsewhere in the repository are found and paths
// read as in Git. Without a checkout, dir itself is the root.
func repositoryRoot(dir string) (root, rel string, err error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", "", err
	}
	info, err := os.Stat(abs)
	if err != nil {
		return "", "", err
	}
	start := abs
	if !info.IsDir() {
		start = filepath.Dir(abs)
	}
	for d := start; ; d = filepath.Dir(d) {
		if _, err := os.Stat(filepath.Join(d, ".git")); err == nil {
			rel, err := filepath.Rel(d, abs)
			return d, filepath.ToSlash(rel), err
		}
		if filepath.Dir(d) == d {
			break
		}
	}
	if !info.IsDir() {
		return start, filepath.Base(abs), nil
	}
	return abs, ".", nil
}

// renderOptions builds the render options from the Guard (with --guard)
// and the flags over them.
func (o *validateOptions) renderOptions(ctx context.Context, c client.Client) (render.RenderOptions, *v1alpha1.Guard, error) {
	var opts render.RenderOptions
	var guard *v1alpha1.Guard
	if o.guard != "" {
		guard = &v1alpha1.Guard{}
		if err := c.Get(ctx, client.ObjectKey{Name: o.guard}, guard); err != nil {
			return opts, nil, fmt.Errorf("guard %s: %w", o.guard, err)
		}
		var err error
		if opts, err = reconcile.RenderOptions(ctx, c, guard, o.guardNamespace); err != nil {
			return opts, nil, fmt.Errorf("guard %s: %w", o.guard, err)
		}
	}
	if len(o.varsFiles) > 0 || len(o.vars) > 0 {
		vars := maps.Clone(opts.Vars)
		if vars == nil {
			vars = map[string]string{}
		}
		for _, f := range o.varsFiles {
			data, err := os.ReadFile(f)
			if err != nil {
				return opts, nil, err
			}
			var m map[string]any
			if err := yaml.Unmarshal(data, &m); err != nil {
				return opts, nil, fmt.Errorf("--vars-file %s: %w", f, err)
			}
			for k, v := range m {
				s, ok := v.(string)
				if !ok {
					b, _ := json.Marshal(v)
					s = string(b)
				}
				vars[k] = s
			}
		}
		for _, kv := range o.vars {
			k, v, ok := strings.Cut(kv, "=")
			if !ok {
				return opts, nil, fmt.Errorf("--vars %q: want NAME=VALUE", kv)
			}
			vars[k] = v
		}
		for k := range vars {
			if err := render.CheckVarName(k); err != nil {
				return opts, nil, err
			}
		}
		opts.Vars = vars
	}
	if err := o.limits.Validate(); err != nil {
		return opts, nil, err
	}
	opts.Limits = o.limits
	opts.Helm.ValuesFiles = append(slices.Clone(opts.Helm.ValuesFiles), o.helmValues...)
	if o.releaseName != "" {
		opts.Helm.ReleaseName = o.releaseName
	}
	if o.releaseNS != "" {
		opts.Helm.Namespace = o.releaseNS
	}
	for _, f := range o.ageKeyFiles {
		data, err := os.ReadFile(f)
		if err != nil {
			return opts, nil, err
		}
		if err := render.CheckAgeKey(string(data)); err != nil {
			return opts, nil, fmt.Errorf("--age-key-file %s: %w", f, err)
		}
		opts.AgeKeys = append(opts.AgeKeys, string(data))
	}
	return opts, guard, nil
}

// renderProblems lists the RenderErrors in err.
func renderProblems(err error) []problem {
	var list render.RenderErrors
	var one *render.RenderError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &list):
		out := make([]problem, len(list))
		for i, re := range list {
			out[i] = problem{path: re.Path, line: re.Line, msg: re.Err.Error()}
		}
		return out
	case errors.As(err, &one):
		return []problem{{path: one.Path, line: one.Line, msg: one.Err.Error()}}
	}
	return nil
}

// clusterProblems checks every object against the cluster: its kind must be
// known (or defined by a CRD of the same render), and the API server must
// accept it in a server-side dry run of the apply the guard would make.
func clusterProblems(ctx context.Context, c client.Client, snap *render.Snapshot, guard string, createNamespace bool) ([]problem, error) {
	// Kinds and namespaces this render brings itself.
	defined := sets.New[string]()
	namespaces := sets.New[string]()
	for _, o := range snap.Objects {
		switch {
		case o.Key.Group == "apiextensions.k8s.io" && o.Key.Kind == "CustomResourceDefinition":
			group, _, _ := unstructured.NestedString(o.Obj().Object, "spec", "group")
			kind, _, _ := unstructured.NestedString(o.Obj().Object, "spec", "names", "kind")
			defined.Insert(group + "/" + kind)
		case o.Key.Group == "" && o.Key.Kind == "Namespace":
			namespaces.Insert(o.Key.Name)
		}
	}
	var problems []problem
	var known []*render.Object
	for _, o := range snap.Objects {
		gvk := o.GVK()
		_, err := c.RESTMapper().RESTMapping(gvk.GroupKind(), gvk.Version)
		switch {
		case err == nil:
			known = append(known, o)
		case meta.IsNoMatchError(err):
			if !defined.Has(gvk.Group + "/" + gvk.Kind) {
				problems = append(problems, problem{path: o.Source.Path, line: o.Source.Line,
					msg: fmt.Sprintf("%s: kind %s of %s is not known to the cluster", o.Key.Display(), gvk.Kind, gvk.GroupVersion())})
			}
		default:
			return nil, fmt.Errorf("discovery of %s: %w", gvk, err)
		}
	}
	known = decorated(c, guard, known)
	applier := &apply.Applier{Client: c}
	for _, o := range known {
		err := applier.DryRun(ctx, o, nil)
		if err == nil {
			continue
		}
		var status apierrors.APIStatus
		if !errors.As(err, &status) {
			return nil, fmt.Errorf("dry run of %s: %w", o.Key.Display(), err) // no answer from the API server
		}
		if ns := o.Key.Namespace; ns != "" && (namespaces.Has(ns) || createNamespace) && isNamespaceNotFound(err, ns) {
			continue // the namespace comes with this render
		}
		problems = append(problems, problem{path: o.Source.Path, line: o.Source.Line,
			msg: fmt.Sprintf("%s: rejected by the API server: %v", o.Key.Display(), err)})
	}
	return problems, nil
}

// decorated gives the objects the guard's label and the default
// namespace, as the guard applies them.
func decorated(c client.Client, guard string, objs []*render.Object) []*render.Object {
	snap, err := render.NewSnapshot("", "", objs)
	if err != nil {
		return objs
	}
	if snap, err = apply.Decorate(c, guard, snap); err != nil {
		return objs
	}
	return snap.Objects
}

func isNamespaceNotFound(err error, ns string) bool {
	return ns != "" && strings.Contains(err.Error(), fmt.Sprintf("namespaces %q not found", ns))
}

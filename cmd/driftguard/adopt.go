package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/mail"
	"os"
	"path"
	"strings"
	"time"

	"github.com/spf13/cobra"
	authenticationv1 "k8s.io/api/authentication/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/driftguard/driftguard/api/v1alpha1"
	"github.com/driftguard/driftguard/app"
	"github.com/driftguard/driftguard/apply"
	"github.com/driftguard/driftguard/drift"
	"github.com/driftguard/driftguard/gitwrite"
	"github.com/driftguard/driftguard/gitwrite/yamledit"
	"github.com/driftguard/driftguard/reconcile"
	"github.com/driftguard/driftguard/redact"
	"github.com/driftguard/driftguard/render"
	"github.com/driftguard/driftguard/source"
)

// writeOptions are the flags adopt and rollback share: the cluster, Git
// credentials and the commit's author.
type writeOptions struct {
	kubeconfig      string
	secretNamespace string
	gitUsername     string
	gitPassword     string
	gitToken        string
	author          string
	message         string
	dryRun          bool
}

func (o *writeOptions) bind(cmd *cobra.Command) {
	f := cmd.Flags()
	f.StringVar(&o.kubeconfig, "kubeconfig", "", "kubeconfig of the cluster (default: $KUBECONFIG, ~/.kube/config)")
	f.StringVar(&o.secretNamespace, "secret-namespace", "driftguard-system", "the guard's namespace, where the Guard's spec.git.secretRef Secret is read when it names none")
	f.StringVar(&o.gitUsername, "git-username", "", "user name for pushing over HTTP(S) (default: the Guard's spec.git.secretRef Secret)")
	f.StringVar(&o.gitPassword, "git-password", "", "password for --git-username (env DRIFTGUARD_GIT_PASSWORD)")
	f.StringVar(&o.gitToken, "git-token", "", "bearer token for pushing over HTTP(S) (env DRIFTGUARD_GIT_TOKEN)")
	f.StringVar(&o.author, "author", "", `commit author, "Name <email>" (default: your Kubernetes user name)`)
	f.StringVarP(&o.message, "message", "m", "", "first line of the commit message (default: generated)")
	f.BoolVar(&o.dryRun, "dry-run", false, "print the change as a diff; commit and push nothing")
}

// cluster is a client of the cluster and what it knows about kinds.
type cluster struct {
	config    *rest.Config
	client    client.Client
	namespace string // the kubeconfig context's namespace
	mapper    meta.RESTMapper
}

func connect(kubeconfig string) (*cluster, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = kubeconfig
	cc := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{})
	cfg, err := cc.ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("kubeconfig: %w", err)
	}
	ns, _, err := cc.Namespace()
	if err != nil || ns == "" {
		ns = "default"
	}
	c, err := client.New(cfg, client.Options{Scheme: app.Scheme()})
	if err != nil {
		return nil, err
	}
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return nil, err
	}
	cached := memory.NewMemCacheClient(dc)
	mapper := restmapper.NewShortcutExpander(restmapper.NewDeferredDiscoveryRESTMapper(cached), cached, nil)
	return &cluster{config: cfg, client: c, namespace: ns, mapper: mapper}, nil
}

// guard reads a Guard.
func (k *cluster) guard(ctx context.Context, name string) (*v1alpha1.Guard, error) {
	var g v1alpha1.Guard
	if err := k.client.Get(ctx, client.ObjectKey{Name: name}, &g); err != nil {
		return nil, fmt.Errorf("guard %s: %w", name, err)
	}
	// adopt and rollback write to Git: the code reads spec.git.
	if g.Spec.Git == nil {
		return nil, fmt.Errorf("guard %s does not read Git (it names spec.helmRepository, spec.oci or spec.bucket): adopt and rollback write to Git", name)
	}
	return &g, nil
}

// user returns the name the API server knows the caller by.
func (k *cluster) user(ctx context.Context) string {
	r := &authenticationv1.SelfSubjectReview{}
	if err := k.client.Create(ctx, r); err != nil || r.Status.UserInfo.Username == "" {
		return ""
	}
	return r.Status.UserInfo.Username
}

// remote resolves the branch a Guard follows and the credentials to push
// to it: the flags, else the Guard's spec.git.secretRef.
func (o *writeOptions) remote(ctx context.Context, k *cluster, g *v1alpha1.Guard) (gitwrite.Remote, error) {
	if o.gitPassword == "" {
		o.gitPassword = os.Getenv("DRIFTGUARD_GIT_PASSWORD")
	}
	if o.gitToken == "" {
		o.gitToken = os.Getenv("DRIFTGUARD_GIT_TOKEN")
	}
	var auth *source.Auth
	switch {
	case o.gitToken != "" && (o.gitUsername != "" || o.gitPassword != ""):
		return gitwrite.Remote{}, errors.New("--git-token excludes --git-username and --git-password")
	case o.gitToken != "":
		auth = &source.Auth{BearerToken: o.gitToken}
	case o.gitUsername != "" || o.gitPassword != "":
		auth = &source.Auth{Username: o.gitUsername, Password: o.gitPassword}
	default:
		var err error
		if auth, err = reconcile.Auth(ctx, k.client, g, o.secretNamespace); err != nil {
			return gitwrite.Remote{}, fmt.Errorf("guard %s: %w", g.Name, err)
		}
	}
	branch, err := gitwrite.ResolveBranch(ctx, g.Spec.Git.URL, g.Spec.Git.Ref, auth)
	if err != nil {
		return gitwrite.Remote{}, fmt.Errorf("guard %s: %w", g.Name, err)
	}
	return gitwrite.Remote{URL: g.Spec.Git.URL, Branch: branch, Auth: auth}, nil
}

// signature is the commit author: --author, else the Kubernetes user.
func (o *writeOptions) signature(ctx context.Context, k *cluster) (gitwrite.Signature, string, error) {
	user := k.user(ctx)
	if o.author != "" {
		a, err := parseAuthor(o.author)
		return a, user, err
	}
	name := user
	if name == "" {
		name = os.Getenv("USER")
	}
	if name == "" {
		return gitwrite.Signature{}, user, errors.New("no author: give --author \"Name <email>\"")
	}
	return gitwrite.Signature{Name: name, Email: os.Getenv("GIT_AUTHOR_EMAIL")}, user, nil
}

// parseAuthor reads "Name <email>".
func parseAuthor(s string) (gitwrite.Signature, error) {
	a, err := mail.ParseAddress(s)
	if err != nil {
		return gitwrite.Signature{}, fmt.Errorf(`--author %q: want "Name <email>": %w`, s, err)
	}
	name := a.Name
	if name == "" {
		name = a.Address
	}
	return gitwrite.Signature{Name: name, Email: a.Address}, nil
}

type adoptOptions struct {
	writeOptions
	namespace string
	guard     string
	wait      time.Duration
}

func newAdoptCommand() *cobra.Command {
	o := &adoptOptions{}
	cmd := &cobra.Command{
		Use:   "adopt KIND/NAME [-n NAMESPACE] [--guard GUARD] [--message M] [--dry-run]",
		Short: "Write the live values of an object's drifted fields into its Git file, commit and push",
		Long: `adopt makes Git agree with the cluster for one object: it reads the live
object, finds its Guard (label driftguard.io/guard, or --guard), clones the
Guard's branch, renders the Guard's path to find the object's file and line,
compares the object with the cluster as the guard does (with the Guard's
ignore rules), writes the live value of every differing field into that file
(keeping its comments and layout), commits and pushes. The commit message
names the object, the fields, and the break-glass reason and the person the
live object records.

After the push, adopt waits (--wait) for the Guard to apply the commit and
then removes the object's driftguard.io/break-glass and driftguard.io/changed-by
annotations: the change is in Git now, so it is no longer a break-glass change.
Nothing is reverted when the break-glass TTL ends, because the object equals Git.

With --dry-run it prints the change of the file as a diff instead.
Credentials: --git-token or --git-username/--git-password, else the Secret the
Guard's spec.git.secretRef names, read with the same kubeconfig. Secrets are not
adopted: their values do not belong in Git.`,
		Example: `  driftguard adopt deployment/web -n shop
  driftguard adopt cm/settings -n shop --message "keep the sale settings" --dry-run`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runAdopt(cmd.Context(), cmd.OutOrStdout(), cmd.ErrOrStderr(), args[0], o)
		},
	}
	o.bind(cmd)
	cmd.Flags().StringVarP(&o.namespace, "namespace", "n", "", "namespace of the object (default: the kubeconfig context's)")
	cmd.Flags().StringVar(&o.guard, "guard", "", "the Guard whose repository holds the object (default: its driftguard.io/guard label)")
	cmd.Flags().DurationVar(&o.wait, "wait", 2*time.Minute, "how long to wait for the Guard to apply the commit before removing the break-glass annotations (0: do not wait, leave them)")
	return cmd
}

// parseObjectArg splits KIND/NAME.
func parseObjectArg(arg string) (kind, name string, err error) {
	kind, name, ok := strings.Cut(arg, "/")
	if !ok || kind == "" || name == "" || strings.Contains(name, "/") {
		return "", "", fmt.Errorf("%q: want KIND/NAME, for example deployment/web", arg)
	}
	return kind, name, nil
}

// kindFor resolves what a person types (deploy, deployments.apps,
// Deployment) to a kind the cluster serves.
func (k *cluster) kindFor(kind string) (schema.GroupVersionKind, bool, error) {
	lower := strings.ToLower(kind)
	gvr, gr := schema.ParseResourceArg(lower)
	var gvk schema.GroupVersionKind
	var err error
	if gvr != nil {
		gvk, err = k.mapper.KindFor(*gvr)
	}
	if gvr == nil || err != nil {
		gvk, err = k.mapper.KindFor(gr.WithVersion(""))
	}
	if err != nil {
		return schema.GroupVersionKind{}, false, fmt.Errorf("kind %q: the cluster serves no such resource: %w", kind, err)
	}
	m, err := k.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if err != nil {
		return schema.GroupVersionKind{}, false, fmt.Errorf("kind %q: %w", kind, err)
	}
	return gvk, m.Scope.Name() == meta.RESTScopeNameNamespace, nil
}

// adopted is what the edit of one attempt wrote.
type adopted struct {
	changes []drift.Change
	file    string
	line    int
	desired map[string]any // the object as Git holds it after the edit
}

func runAdopt(ctx context.Context, out, errOut io.Writer, arg string, o *adoptOptions) error {
	kindArg, name, err := parseObjectArg(arg)
	if err != nil {
		return err
	}
	k, err := connect(o.kubeconfig)
	if err != nil {
		return err
	}
	t, err := findAdoptTarget(ctx, k, kindArg, name, o)
	if err != nil {
		return err
	}
	g := t.guard
	rules, err := reconcile.CompileIgnoreRules(g.Spec.Ignore)
	if err != nil {
		return fmt.Errorf("guard %s: spec.%w", g.Name, err)
	}
	remote, author, user, err := o.pushTo(ctx, k, g)
	if err != nil {
		return err
	}
	annotations := t.live.GetAnnotations()
	reason := annotations[v1alpha1.BreakGlassAnnotation]
	stamp, stamped := v1alpha1.ParseChangedBy(annotations[v1alpha1.ChangedByAnnotation])

	var last adopted
	edit := func(_ context.Context, c *gitwrite.Checkout) (string, error) {
		a, err := adoptInto(c, g, t.gvk, t.ns, t.name, t.live, rules)
		if err != nil {
			return "", err
		}
		last = a
		note := gitwrite.Adoption{Object: t.object, File: a.file, Line: a.line, Changes: a.changes, Guard: g.Name,
			Reason: reason, AdoptedBy: user, Summary: o.message}
		if stamped {
			note.ChangedBy, note.ChangedAt = stamp.User, stamp.Time
		}
		return note.Message(), nil
	}

	res, err := o.commit(ctx, out, g, remote, author, 1, edit)
	if errors.Is(err, gitwrite.ErrNoChange) {
		fmt.Fprintf(out, "in sync: %s equals Git at %.7s; nothing to adopt\n", t.object, res.Base)
		return nil
	}
	if err != nil || res == nil {
		return err
	}
	fmt.Fprintf(out, "adopted %d %s of %s into %s (line %d): commit %s on branch %s\n",
		len(last.changes), plural(len(last.changes), "field", "fields"), t.object, last.file, last.line, res.SHA, remote.Branch)
	for _, c := range last.changes {
		fmt.Fprintf(out, "  %s\n", changeText(c))
	}
	if reason == "" && !stamped {
		return nil
	}
	if stamped && reason != "" {
		if left := time.Until(stamp.Time.Add(breakGlassTTL(g))); left < time.Minute {
			fmt.Fprintf(errOut, "warning: the break-glass TTL of %s %s; if the guard reverts the change before it applies %.7s, its next reconcile puts the adopted values back\n", t.object, ttlText(left), res.SHA)
		}
	}
	if o.wait <= 0 {
		fmt.Fprintf(out, "the break-glass annotations stay; once the Guard applies %.7s the object equals Git and nothing is reverted. Remove them then with\n  %s\n", res.SHA, annotateCommand(t.live))
		return nil
	}
	return clearBreakGlass(ctx, out, errOut, k, g.Name, remote, *res, t.live, last.desired, rules, o.wait)
}

// adoptTarget is the live object adopt writes into Git, and its Guard.
type adoptTarget struct {
	gvk      schema.GroupVersionKind
	ns, name string
	object   string // as messages show it
	live     *unstructured.Unstructured
	guard    *v1alpha1.Guard
}

// findAdoptTarget reads the object (kindArg, name) and the Guard that
// manages it: its label's, which --guard may name but not contradict.
// Secrets are refused: adopt writes no Secret value into Git.
func findAdoptTarget(ctx context.Context, k *cluster, kindArg, name string, o *adoptOptions) (adoptTarget, error) {
	gvk, namespaced, err := k.kindFor(kindArg)
	if err != nil {
		return adoptTarget{}, err
	}
	if gvk.Group == "" && gvk.Kind == "Secret" {
		return adoptTarget{}, errors.New("adopt does not write Secret values into Git: change the Secret's source in Git by hand")
	}
	ns := ""
	if namespaced {
		ns = o.namespace
		if ns == "" {
			ns = k.namespace
		}
	}
	live := &unstructured.Unstructured{}
	live.SetGroupVersionKind(gvk)
	if err := k.client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, live); err != nil {
		return adoptTarget{}, fmt.Errorf("get %s: %w", display(gvk.Kind, ns, name), err)
	}
	object := display(gvk.Kind, ns, name)
	guardName := live.GetLabels()[apply.GuardLabel]
	switch {
	case o.guard != "" && guardName != "" && guardName != o.guard:
		return adoptTarget{}, fmt.Errorf("%s carries %s=%s, not %s", object, apply.GuardLabel, guardName, o.guard)
	case o.guard != "":
		guardName = o.guard
	case guardName == "":
		return adoptTarget{}, fmt.Errorf("%s has no %s label: no Guard manages it; name one with --guard", object, apply.GuardLabel)
	}
	g, err := k.guard(ctx, guardName)
	if err != nil {
		return adoptTarget{}, err
	}
	return adoptTarget{gvk: gvk, ns: ns, name: name, object: object, live: live, guard: g}, nil
}

// adoptInto renders the Guard's path in a checkout, finds the object,
// compares it with the live one and writes the live values into its file.
func adoptInto(c *gitwrite.Checkout, g *v1alpha1.Guard, gvk schema.GroupVersionKind, ns, name string, live *unstructured.Unstructured, rules []*drift.Rule) (adopted, error) {
	fsys, err := c.Tree().FS()
	if err != nil {
		return adopted{}, err
	}
	git := g.Spec.Git
	if git == nil {
		return adopted{}, fmt.Errorf("guard %s has no Git source: adopt writes to Git only", g.Name)
	}
	if why := generated(g); why != "" {
		return adopted{}, fmt.Errorf("guard %s renders its objects with %s: adopt edits plain YAML only; change the source of the object by hand", g.Name, why)
	}
	src := render.Source{URL: git.URL, Revision: c.Base()}
	objs, err := render.Render(fsys, git.Path, src)
	if err != nil {
		return adopted{}, fmt.Errorf("render %s at %.7s: %w", pathOrRoot(git.Path), c.Base(), err)
	}
	want := findObject(objs, gvk, ns, name)
	if want == nil {
		return adopted{}, fmt.Errorf("%s is not in %s of %s at %.7s", display(gvk.Kind, ns, name), pathOrRoot(git.Path), redact.URL(git.URL), c.Base())
	}
	if kust := kustomizationAbove(fsys, want.Source.Path, git.Path); kust != "" {
		return adopted{}, fmt.Errorf("%s comes from %s, built by %s: its patches may set the fields, so adopt does not edit it; change the overlay by hand", display(gvk.Kind, ns, name), want.Source.Path, kust)
	}
	// No server values here: a false Git sets and the server dropped is
	// no change to adopt.
	changes := drift.WithoutDroppedEmpty(drift.Compare(want.Obj().Object, live.Object, drift.For(rules, gvk.Group, gvk.Kind, ns, name, live.Object)))
	if len(changes) == 0 {
		return adopted{}, gitwrite.ErrNoChange
	}
	data, err := c.Tree().ReadFile(want.Source.Path)
	if err != nil {
		return adopted{}, err
	}
	target := yamledit.Target{Line: want.Source.Line, Kind: gvk.Kind, Name: name, Namespace: want.Key.Namespace}
	edited, err := yamledit.Edit(want.Source.Path, data, target, gitwrite.AdoptOps(changes))
	if err != nil {
		return adopted{}, err
	}
	if err := c.Tree().WriteFile(want.Source.Path, edited); err != nil {
		return adopted{}, err
	}
	// The object as Git now holds it, to check the cluster against later.
	fsys, err = c.Tree().FS()
	if err != nil {
		return adopted{}, err
	}
	after, err := render.Render(fsys, want.Source.Path, src)
	if err != nil {
		return adopted{}, fmt.Errorf("internal: %s does not render after the edit: %w", want.Source.Path, err)
	}
	now := findObject(after, gvk, ns, name)
	if now == nil {
		return adopted{}, fmt.Errorf("internal: %s lost %s", want.Source.Path, display(gvk.Kind, ns, name))
	}
	return adopted{changes: changes, file: want.Source.Path, line: want.Source.Line, desired: now.Obj().Object}, nil
}

// findObject returns the rendered object of that kind, namespace and name;
// an object without a namespace in Git is in "default", as the guard
// applies it.
func findObject(objs []*render.Object, gvk schema.GroupVersionKind, ns, name string) *render.Object {
	for _, o := range objs {
		if o.Key.Group != gvk.Group || o.Key.Kind != gvk.Kind || o.Key.Name != name {
			continue
		}
		if o.Key.Namespace == ns || (o.Key.Namespace == "" && ns == "default") {
			return o
		}
	}
	return nil
}

// clearBreakGlass waits until the Guard applied the pushed commit (or a
// later one) and then removes the break-glass annotations from the object,
// if it still equals what Git now holds.
func clearBreakGlass(ctx context.Context, out, errOut io.Writer, k *cluster, guard string, remote gitwrite.Remote, res gitwrite.Result,
	live *unstructured.Unstructured, desired map[string]any, rules []*drift.Rule, wait time.Duration) error {
	key := client.ObjectKeyFromObject(live)
	object := display(live.GetKind(), key.Namespace, key.Name)
	manual := annotateCommand(live)
	deadline := time.Now().Add(wait)
	checked := map[string]bool{res.Base: true}
	for {
		g, err := k.guard(ctx, guard)
		if err != nil {
			return err
		}
		rev := g.Status.LastAppliedRevision
		if rev == res.SHA {
			break
		}
		if rev != "" && !checked[rev] {
			checked[rev] = true
			if later, err := gitwrite.IsAncestor(ctx, remote, res.SHA, rev); err == nil && later {
				break
			}
		}
		if time.Now().After(deadline) {
			fmt.Fprintf(errOut, "warning: guard %s has not applied %.7s within %s; the break-glass annotations stay on %s. Once the guard applies the commit the object equals Git and nothing is reverted; remove them then with\n  %s\n", guard, res.SHA, wait, object, manual)
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(time.Second):
		}
	}
	gvk := live.GroupVersionKind()
	for attempt := 0; attempt < 5; attempt++ {
		now := &unstructured.Unstructured{}
		now.SetGroupVersionKind(gvk)
		if err := k.client.Get(ctx, key, now); err != nil {
			return fmt.Errorf("get %s: %w", object, err)
		}
		if changes := drift.WithoutDroppedEmpty(drift.Compare(desired, now.Object, drift.For(rules, gvk.Group, gvk.Kind, key.Namespace, key.Name, now.Object))); len(changes) > 0 {
			fmt.Fprintf(errOut, "warning: %s changed again since the adoption (%s); the break-glass annotations stay\n", object, strings.Join(drift.Paths(changes), ", "))
			return nil
		}
		ann := now.GetAnnotations()
		_, hasReason := ann[v1alpha1.BreakGlassAnnotation]
		_, hasStamp := ann[v1alpha1.ChangedByAnnotation]
		if !hasReason && !hasStamp {
			fmt.Fprintf(out, "guard %s applied it; the break-glass annotations are gone already\n", guard)
			return nil
		}
		patch, _ := json.Marshal(map[string]any{"metadata": map[string]any{
			"resourceVersion": now.GetResourceVersion(),
			"annotations":     map[string]any{v1alpha1.BreakGlassAnnotation: nil, v1alpha1.ChangedByAnnotation: nil},
		}})
		err := k.client.Patch(ctx, now, client.RawPatch(types.MergePatchType, patch))
		if err == nil {
			fmt.Fprintf(out, "guard %s applied it; removed the %s and %s annotations from %s\n", guard, v1alpha1.BreakGlassAnnotation, v1alpha1.ChangedByAnnotation, object)
			return nil
		}
		if !apierrors.IsConflict(err) && !apierrors.IsForbidden(err) {
			return fmt.Errorf("remove the break-glass annotations of %s: %w", object, err)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(time.Second):
		}
	}
	fmt.Fprintf(errOut, "warning: could not remove the break-glass annotations of %s; remove them with\n  %s\n", object, manual)
	return nil
}

// annotateCommand is the kubectl command that removes the break-glass
// annotations of an object.
func annotateCommand(live *unstructured.Unstructured) string {
	ns := ""
	if live.GetNamespace() != "" {
		ns = " -n " + live.GetNamespace()
	}
	return fmt.Sprintf("kubectl annotate %s/%s%s %s- %s-", strings.ToLower(live.GetKind()), live.GetName(), ns, v1alpha1.BreakGlassAnnotation, v1alpha1.ChangedByAnnotation)
}

func breakGlassTTL(g *v1alpha1.Guard) time.Duration {
	if g.Spec.BreakGlassTTL != nil && g.Spec.BreakGlassTTL.Duration > 0 {
		return g.Spec.BreakGlassTTL.Duration
	}
	return time.Hour
}

func ttlText(left time.Duration) string {
	if left < 0 {
		return "ended " + (-left).Round(time.Second).String() + " ago"
	}
	return "ends in " + left.Round(time.Second).String()
}

func display(kind, ns, name string) string {
	return render.ObjectKey{Kind: kind, Namespace: ns, Name: name}.Display()
}

func pathOrRoot(p string) string {
	if p == "" || p == "." || p == "/" {
		return "the repository root"
	}
	return p
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

func changeText(c drift.Change) string {
	if c.Missing {
		return fmt.Sprintf("%s: %s → (deleted)", c.Path, jsonText(c.Desired))
	}
	return fmt.Sprintf("%s: %s → %s", c.Path, jsonText(c.Desired), jsonText(c.Live))
}

func indent(s string) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	for i, l := range lines {
		if l != "" {
			lines[i] = "    " + l
		}
	}
	return strings.Join(lines, "\n") + "\n"
}

// generated names what renders a Guard's objects beyond plain YAML, "" for
// plain YAML: adopt could not tell which text set a value.
func generated(g *v1alpha1.Guard) string {
	switch {
	case g.Spec.Helm != nil:
		return "Helm (spec.helm)"
	case len(g.Spec.Vars) > 0 || len(g.Spec.VarsFrom) > 0:
		return "variable substitution (spec.vars, spec.varsFrom)"
	case g.Spec.Decryption != nil:
		return "SOPS decryption (spec.decryption)"
	}
	return ""
}

// kustomizationAbove returns the kustomization file in the folder of file,
// or in a folder between it and root, "" when there is none.
func kustomizationAbove(fsys fs.FS, file, root string) string {
	root = path.Clean("/" + root)
	for dir := path.Dir(path.Clean("/" + file)); ; dir = path.Dir(dir) {
		for _, name := range []string{"kustomization.yaml", "kustomization.yml", "Kustomization"} {
			p := strings.TrimPrefix(path.Join(dir, name), "/")
			if _, err := fs.Stat(fsys, p); err == nil {
				return p
			}
		}
		if dir == root || dir == "/" {
			return ""
		}
	}
}

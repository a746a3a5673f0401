package compiledlayer

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/driftguard/driftguard/api/v1alpha1"
	"github.com/driftguard/driftguard/app"
	"github.com/driftguard/driftguard/test/wait"
)

// answer is what one admission request got.
type answer struct {
	denied, warned bool
	text           string
}

func (a answer) String() string {
	switch {
	case a.denied:
		return "denied"
	case a.warned:
		return "warned"
	}
	return "allowed"
}

// warnings collects the warnings of one client.
type warnings struct {
	mu   sync.Mutex
	msgs []string
}

func (w *warnings) HandleWarningHeaderWithContext(_ context.Context, _ int, _ string, msg string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.msgs = append(w.msgs, msg)
}

func (w *warnings) take() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := w.msgs
	w.msgs = nil
	return out
}

type writer struct {
	name   string
	user   string
	groups []string
}

type edit struct {
	name  string
	patch string // a merge patch; "" with del deletes, with scale scales
	del   bool
	scale int
}

// The parity corpus: every writer the default policy tells apart, every kind
// of change the webhook decides, on objects of every enforcement and ignore
// rule, as server-side dry runs. The compiled layer (the guard killed) and
// the webhook (the guard in mode webhook) must give each the same answer:
// denied, admitted with a warning, or admitted.
func TestParity(t *testing.T) {
	const ns, guard = "parity", "parity"
	ctx := context.Background()
	withAnnotation := func(name, enforcement string) string {
		ann := ""
		if enforcement != "" {
			ann = fmt.Sprintf("  annotations: {driftguard.io/enforcement: %s}\n", enforcement)
		}
		return fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: %s\n  namespace: %s\n  labels: {team: a}\n%sdata:\n  value: \"1\"\n  tuned: \"1\"\n", name, ns, ann)
	}
	objects := []string{"c-deny", "c-warn", "c-off", "c-revert", "c-ignored", "c-injected"}
	_, rev := gitNamespace(t, ns, map[string]string{
		"c-deny.yaml":     withAnnotation("c-deny", ""),
		"c-warn.yaml":     withAnnotation("c-warn", "warn"),
		"c-off.yaml":      withAnnotation("c-off", "off"),
		"c-revert.yaml":   withAnnotation("c-revert", "revert"),
		"c-ignored.yaml":  withAnnotation("c-ignored", ""),
		"c-injected.yaml": withAnnotation("c-injected", ""),
		"web.yaml":        deployment(ns, "web", 1),
	})
	injector := "system:serviceaccount:" + ns + ":injector"
	g := &v1alpha1.Guard{
		ObjectMeta: metav1.ObjectMeta{Name: guard},
		Spec: v1alpha1.GuardSpec{Git: &v1alpha1.GitSource{URL: git.URL(guard), Ref: "main"}, Interval: metav1.Duration{Duration: 30 * time.Second},
			Ignore: []v1alpha1.IgnoreRule{
				{Kind: "ConfigMap", Name: "c-ignored", JSONPointers: []string{"/data/tuned", "/metadata/labels/team"}},
				{Kind: "ConfigMap", Name: "c-injected", ManagedFieldsManagers: []string{"injector"}, Users: []string{injector}},
			}},
	}
	if err := admin.Create(ctx, g); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = admin.Delete(context.Background(), g) })

	writers := []writer{
		{"alice", "alice", []string{"dev"}},
		{"sre member", "sam", []string{"sre"}},
		{"controller manager", "system:kube-controller-manager", nil},
		{"garbage collector", "system:serviceaccount:kube-system:generic-garbage-collector", nil},
		{"namespace controller", "system:serviceaccount:kube-system:namespace-controller", nil},
		{"kube-system prefix only", "system:serviceaccount:kube-system:", nil},
		{"node", "system:node:n1", []string{"system:nodes"}},
		{"injector", injector, nil},
		{"a cluster admin", "root", nil},
	}
	edits := []edit{
		{name: "no-op", patch: `{"data":{"value":"1"}}`},
		{name: "change a value", patch: `{"data":{"value":"2"}}`},
		{name: "add a key", patch: `{"data":{"extra":"x"}}`},
		{name: "remove a key", patch: `{"data":{"value":null}}`},
		{name: "change an ignored value", patch: `{"data":{"tuned":"2"}}`},
		{name: "add a label", patch: `{"metadata":{"labels":{"x":"y"}}}`},
		{name: "change an ignored label", patch: `{"metadata":{"labels":{"team":"b"}}}`},
		{name: "remove the guard label", patch: `{"metadata":{"labels":{"driftguard.io/guard":null}}}`},
		{name: "add an annotation", patch: `{"metadata":{"annotations":{"note":"x"}}}`},
		{name: "add a driftguard.io annotation", patch: `{"metadata":{"annotations":{"driftguard.io/note":"x"}}}`},
		{name: "add a finalizer", patch: `{"metadata":{"finalizers":["example.com/hold"]}}`},
		{name: "break-glass with a reason", patch: `{"metadata":{"annotations":{"driftguard.io/break-glass":"INC-1"}},"data":{"value":"3"}}`},
		{name: "break-glass without a reason", patch: `{"metadata":{"annotations":{"driftguard.io/break-glass":"  "}},"data":{"value":"3"}}`},
		{name: "delete", del: true},
	}
	dir := filepath.Join(workDir, t.Name())
	p := startGuard(t, dir, "both", nil)
	waitIndexed(t, ns, "configmaps._c-deny", "c-deny.yaml:1", rev)
	if err := p.Kill(); err != nil {
		t.Fatal(err)
	}
	run := func() map[string]answer {
		out := map[string]answer{}
		for _, w := range writers {
			c, warn := impersonate(t, w)
			for _, obj := range objects {
				for _, e := range edits {
					out[w.name+" / "+obj+" / "+e.name] = ask(ctx, c, warn, ns, obj, e)
				}
			}
			for _, n := range []int{1, 4} {
				out[fmt.Sprintf("%s / web / scale to %d", w.name, n)] = ask(ctx, c, warn, ns, "web", edit{scale: n})
			}
		}
		return out
	}
	// The API server enforces a new binding once its parameter informer
	// has synced, and a rewritten policy (a new shape, a new resource) once
	// it has loaded it: wait for the last policies the guard wrote.
	aliceC, warnC := impersonate(t, writers[0])
	wait.Eventually(t, 60*time.Second, "the API server enforces the compiled policies", func() error {
		if a := ask(ctx, aliceC, warnC, ns, "c-deny", edits[1]); !a.denied || !strings.Contains(a.text, "ValidatingAdmissionPolicy") {
			return fmt.Errorf("alice's change: %s %s", a, a.text)
		}
		if a := ask(ctx, aliceC, warnC, ns, "web", edit{scale: 4}); !a.denied {
			return fmt.Errorf("alice's scale: %s %s", a, a.text)
		}
		if a := ask(ctx, aliceC, warnC, ns, "c-ignored", edits[4]); a.denied {
			return fmt.Errorf("alice's change of an ignored value: %s %s", a, a.text)
		}
		return nil
	})
	compiledAnswers := run()

	// The webhook alone: the guard in mode webhook removes the compiled
	// policies but the canary, which decides nothing but the create of its
	// probe (compiled/canary.go).
	startGuard(t, dir, "webhook", nil)
	wait.Eventually(t, 60*time.Second, "the compiled policies are removed", func() error {
		l, err := kube.AdmissionregistrationV1().ValidatingAdmissionPolicies().List(ctx, metav1.ListOptions{LabelSelector: "driftguard.io/compiled=" + webhookName})
		if err != nil || len(l.Items) != 1 || l.Items[0].Name != webhookName+"-canary" {
			return fmt.Errorf("%d policies (%v)", len(l.Items), err)
		}
		return nil
	})
	aliceW, warnW := impersonate(t, writers[0])
	wait.Eventually(t, 60*time.Second, "the webhook decides", func() error {
		if a := ask(ctx, aliceW, warnW, ns, "c-deny", edits[1]); !a.denied || !strings.Contains(a.text, "webhook") {
			return fmt.Errorf("alice's change: %s %s", a, a.text)
		}
		return nil
	})
	webhookAnswers := run()

	// The one documented fallback (docs/policy.md): an update by a user of
	// a managedFieldsManagers rule, on an object the rule matches, is the
	// webhook's to decide (by the fields the manager owns); the compiled
	// layer admits it.
	fallback := func(k string) bool {
		return strings.HasPrefix(k, "injector / c-injected / ") && !strings.HasSuffix(k, " / delete")
	}
	var diffs []string
	counts := map[string]int{}
	fallbacks := 0
	for k, c := range compiledAnswers {
		w := webhookAnswers[k]
		counts[w.String()]++
		switch {
		case fallback(k) && !c.denied:
			fallbacks++
		case c.String() != w.String():
			diffs = append(diffs, fmt.Sprintf("%s: compiled %s, webhook %s (%s | %s)", k, c, w, c.text, w.text))
		}
	}
	t.Logf("corpus: %d requests, webhook answers %v, %d left to the webhook", len(compiledAnswers), counts, fallbacks)
	if len(diffs) > 0 {
		t.Fatalf("%d of %d answers differ:\n%s", len(diffs), len(compiledAnswers), strings.Join(diffs, "\n"))
	}
	if fallbacks != len(edits)-1 {
		t.Fatalf("%d updates left to the webhook, want %d", fallbacks, len(edits)-1)
	}
}

func impersonate(t *testing.T, w writer) (client.Client, *warnings) {
	t.Helper()
	cfg := env.Fast(cluster.Config)
	// Everyone may write as far as RBAC goes: the policy decides.
	cfg.Impersonate = rest.ImpersonationConfig{UserName: w.user, Groups: append([]string{"system:masters"}, w.groups...)}
	warn := &warnings{}
	cfg.WarningHandlerWithContext = warn
	c, err := client.New(cfg, client.Options{Scheme: app.Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	return c, warn
}

// ask sends one edit as a server-side dry run.
func ask(ctx context.Context, c client.Client, warn *warnings, ns, name string, e edit) answer {
	warn.take()
	var err error
	switch {
	case e.scale > 0:
		d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
		err = c.SubResource("scale").Patch(ctx, d, client.RawPatch(types.MergePatchType, []byte(fmt.Sprintf(`{"spec":{"replicas":%d}}`, e.scale))), client.DryRunAll)
	case e.del:
		err = c.Delete(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}, client.DryRunAll)
	default:
		err = c.Patch(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}, client.RawPatch(types.MergePatchType, []byte(e.patch)), client.DryRunAll)
	}
	a := answer{}
	if err != nil {
		a.denied, a.text = true, err.Error()
		if !apierrors.IsForbidden(err) && !apierrors.IsInvalid(err) {
			a.text = "unexpected: " + a.text
		}
	}
	if msgs := warn.take(); len(msgs) > 0 {
		a.warned, a.text = true, a.text+strings.Join(msgs, "; ")
	}
	return a
}

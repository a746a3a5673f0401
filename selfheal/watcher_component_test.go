package selfheal_test

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/testr"
	appsv1 "k8s.io/api/apps/v1"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/driftguard/driftguard/api/v1alpha1"
	"github.com/driftguard/driftguard/app"
	"github.com/driftguard/driftguard/apply"
	"github.com/driftguard/driftguard/audit"
	"github.com/driftguard/driftguard/compiled"
	"github.com/driftguard/driftguard/devenv"
	"github.com/driftguard/driftguard/policy"
	"github.com/driftguard/driftguard/reconcile"
	"github.com/driftguard/driftguard/render"
	"github.com/driftguard/driftguard/selfheal"
	"github.com/driftguard/driftguard/settings"
	"github.com/driftguard/driftguard/source"
	"github.com/driftguard/driftguard/test/harness"
	"github.com/driftguard/driftguard/test/wait"
)

// healNS is the namespace of the objects Git declares.
const healNS = "heal"

// gitFiles are what the Guard "app" declares: one object per case below.
var gitFiles = map[string]string{
	"namespace.yaml": "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: " + healNS + "\n",
	"settings.yaml":  configMap("settings", "greeting: from git"),
	"tuned.yaml":     configMap("tuned", "greeting: from git\n  tuned: from git"),
	"extra.yaml":     configMap("extra", "greeting: from git"),
	"gone.yaml":      configMap("gone", "greeting: from git"),
	"web.yaml": `apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  namespace: ` + healNS + `
spec:
  replicas: 1
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers: [{name: web, image: "nginx:1.27"}]
`,
}

func configMap(name, data string) string {
	return "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: " + name + "\n  namespace: " + healNS + "\ndata:\n  " + data + "\n"
}

// The Guard's ignore rules: a field of one ConfigMap, and what an
// autoscaler (the controller manager) owns of a Deployment, as docs/drift.md
// gives it.
var ignoreRules = []v1alpha1.IgnoreRule{
	{Kind: "ConfigMap", Name: "tuned", JSONPointers: []string{"/data/tuned"}},
	{Group: "apps", Kind: "Deployment", ManagedFieldsManagers: []string{"kube-controller-manager"}},
}

// personManager is the field manager of alice's writes, as kubectl edit's.
const personManager = "kubectl-edit"

// The drift watcher alone, on a real kube-apiserver and a real Git server
// on loopback: the Guard controller puts Git's objects in place and in the
// store the watcher compares with, and the watcher reverts through the
// real apply engine, decides with the built-in policy and attributes with
// the API server's own stamp (the compiled stamp policy). No webhook,
// health, drift status or the rest of the guard runs. Each case is a write
// by another user, alice, after which the object must be back to Git with
// one drift record, attributed to her, naming exactly the fields that
// drifted; a field an ignore rule hides, or an autoscaler's replicas
// written before her change, stay as their owner wrote them.
func TestWatcherRevertsAnotherUsersChange(t *testing.T) {
	e := startEnv(t)
	ctx := t.Context()
	alice, err := client.New(e.AliceConfig, client.Options{Scheme: app.Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	startStampPolicy(t, e, alice)
	recs := startGuard(t, e)

	for _, tc := range []struct {
		name string
		obj  client.Object // its kind and name
		// owner is a write by the owner of an ignored field, before alice's.
		owner func(ctx context.Context, c client.Client) error
		// person is alice's change.
		person     func(ctx context.Context, c client.Client, obj client.Object) error
		wantType   audit.Type
		wantFields []string
		// after checks the object once reverted.
		after func(obj client.Object) error
	}{{
		name: "a changed value is reverted", obj: &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "settings"}},
		person:   patch(func(o client.Object) { o.(*corev1.ConfigMap).Data["greeting"] = "by hand" }),
		wantType: audit.Revert, wantFields: []string{"/data/greeting"},
		after: func(o client.Object) error { return wantData(o, "greeting", "from git") },
	}, {
		name: "an added field is removed", obj: &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "extra"}},
		person:   patch(func(o client.Object) { o.(*corev1.ConfigMap).Data["extra"] = "by hand" }),
		wantType: audit.Revert, wantFields: []string{"/data/extra"},
		after: func(o client.Object) error { return wantData(o, "extra", "") },
	}, {
		name: "an ignored field is kept", obj: &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "tuned"}},
		owner: func(ctx context.Context, c client.Client) error {
			return patch(func(o client.Object) { o.(*corev1.ConfigMap).Data["tuned"] = "by its owner" })(ctx, c, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: healNS, Name: "tuned"}})
		},
		person:   patch(func(o client.Object) { o.(*corev1.ConfigMap).Data["greeting"] = "by hand" }),
		wantType: audit.Revert, wantFields: []string{"/data/greeting"},
		after: func(o client.Object) error {
			if err := wantData(o, "greeting", "from git"); err != nil {
				return err
			}
			return wantData(o, "tuned", "by its owner")
		},
	}, {
		name: "an autoscaler's replicas are not fought", obj: &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "web"}},
		owner: scaleAsAutoscaler("web", 3),
		person: patch(func(o client.Object) {
			o.(*appsv1.Deployment).Spec.Template.Spec.Containers[0].Image = "nginx:evil"
		}),
		wantType: audit.Revert, wantFields: []string{"/spec/template/spec/containers/0/image"},
		after: func(o client.Object) error {
			d := o.(*appsv1.Deployment)
			if img := d.Spec.Template.Spec.Containers[0].Image; img != "nginx:1.27" || *d.Spec.Replicas != 3 {
				return fmt.Errorf("image %s, replicas %d; want Git's image and the autoscaler's 3 replicas", img, *d.Spec.Replicas)
			}
			return nil
		},
	}, {
		name: "a deleted object is recreated", obj: &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "gone"}},
		person: func(ctx context.Context, c client.Client, o client.Object) error {
			return c.Delete(ctx, o)
		},
		wantType: audit.Recreate,
		after:    func(o client.Object) error { return wantData(o, "greeting", "from git") },
	}} {
		t.Run(tc.name, func(t *testing.T) {
			obj := tc.obj
			obj.SetNamespace(healNS)
			kind := kindOf(t, obj)
			if tc.owner != nil {
				if err := tc.owner(ctx, e.Admin); err != nil {
					t.Fatal(err)
				}
			}
			if err := tc.person(ctx, alice, obj); err != nil {
				t.Fatal(err)
			}
			ofObject := func(typ audit.Type) func(audit.Record) bool {
				return func(r audit.Record) bool {
					return r.Type == typ && r.Object.Kind == kind && r.Object.Name == obj.GetName()
				}
			}
			recs.Wait(t, 60*time.Second, fmt.Sprintf("%s of %s %s", tc.wantType, kind, obj.GetName()), ofObject(tc.wantType))
			drifts := recs.Find(ofObject(audit.Drift))
			if len(drifts) != 1 {
				t.Fatalf("%d drift records of %s %s, want 1: %+v", len(drifts), kind, obj.GetName(), drifts)
			}
			checkDrift(t, drifts[0], tc.wantType == audit.Recreate, tc.wantFields)
			got := obj.DeepCopyObject().(client.Object)
			if err := e.Admin.Get(ctx, client.ObjectKeyFromObject(obj), got); err != nil {
				t.Fatal(err)
			}
			if err := tc.after(got); err != nil {
				t.Error(err)
			}
		})
	}
}

// checkDrift: the record names the Guard, alice (as the API server stamped
// her), her field manager but for a deletion, and the fields.
func checkDrift(t *testing.T, r audit.Record, deleted bool, wantFields []string) {
	t.Helper()
	var fields []string
	for _, f := range r.Fields {
		fields = append(fields, f.Path)
	}
	wantOp, wantUser, wantManager := "DRIFT", "alice", personManager
	if deleted {
		wantOp, wantUser, wantManager = "DELETE", "unknown", "unknown" // nothing is left to read
	}
	if r.Guard != "app" || r.Operation != wantOp || r.User != wantUser || r.Manager != wantManager || !slices.Equal(fields, wantFields) {
		t.Errorf("drift record: guard %q, operation %q, user %q, manager %q, fields %v; want app, %s, %s, %s, %v",
			r.Guard, r.Operation, r.User, r.Manager, fields, wantOp, wantUser, wantManager, wantFields)
	}
}

func kindOf(t *testing.T, obj client.Object) string {
	t.Helper()
	gvk, err := apiutil.GVKForObject(obj, app.Scheme())
	if err != nil {
		t.Fatal(err)
	}
	return gvk.Kind
}

// patch returns alice's change: the object as it is, changed by edit,
// written back under personManager.
func patch(edit func(client.Object)) func(ctx context.Context, c client.Client, obj client.Object) error {
	return func(ctx context.Context, c client.Client, obj client.Object) error {
		if err := c.Get(ctx, client.ObjectKeyFromObject(obj), obj); err != nil {
			return fmt.Errorf("get %s: %w", obj.GetName(), err)
		}
		before := obj.DeepCopyObject().(client.Object)
		edit(obj)
		if err := c.Patch(ctx, obj, client.MergeFrom(before), client.FieldOwner(personManager)); err != nil {
			return fmt.Errorf("patch %s: %w", obj.GetName(), err)
		}
		return nil
	}
}

// scaleAsAutoscaler writes a Deployment's replicas as the HPA controller
// does: through the scale subresource, as the controller manager.
func scaleAsAutoscaler(name string, replicas int32) func(ctx context.Context, c client.Client) error {
	return func(ctx context.Context, c client.Client) error {
		d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: healNS, Name: name}}
		scale := &autoscalingv1.Scale{Spec: autoscalingv1.ScaleSpec{Replicas: replicas}}
		if err := c.SubResource("scale").Update(ctx, d, client.WithSubResourceBody(scale), client.FieldOwner("kube-controller-manager")); err != nil {
			return fmt.Errorf("scale %s: %w", name, err)
		}
		return nil
	}
}

func wantData(o client.Object, key, want string) error {
	if got := o.(*corev1.ConfigMap).Data[key]; got != want {
		return fmt.Errorf("ConfigMap %s: data %s %q, want %q", o.GetName(), key, got, want)
	}
	return nil
}

// startEnv starts a control plane and a Git server for the test (test/harness).
func startEnv(t *testing.T) *harness.Env {
	t.Helper()
	devenv.RequireBinaries(t, false)
	e, err := harness.StartEnv(harness.EnvOptions{Dir: t.TempDir()})
	t.Cleanup(e.Stop)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// startStampPolicy puts the compiled stamp policy in force for ConfigMaps
// and Deployments, so that the API server names the last writer of a
// managed object, and waits until it does: a write of alice's on an
// object no Guard declares is stamped with her name.
func startStampPolicy(t *testing.T, e *harness.Env, alice client.Client) {
	t.Helper()
	ctx := t.Context()
	cfg := compiled.Config{Name: "selfheal-test", GuardUsers: []string{"driftguard"}, Resources: []compiled.Resource{
		{Resource: "configmaps", Namespaced: true}, {Group: "apps", Resource: "deployments", Namespaced: true},
	}}
	p, b := cfg.StampPolicy()
	for _, o := range []client.Object{p, b} {
		if err := e.Admin.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	probe := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "stamp-probe", Labels: map[string]string{apply.GuardLabel: "none"}}}
	if err := e.Admin.Create(ctx, probe); err != nil {
		t.Fatal(err)
	}
	n := 0
	wait.Eventually(t, 60*time.Second, "the API server stamps alice's writes", func() error {
		n++
		if err := patch(func(o client.Object) { o.SetAnnotations(map[string]string{"probe": fmt.Sprint(n)}) })(ctx, alice, probe); err != nil {
			return err
		}
		if got := probe.GetAnnotations()[v1alpha1.APIServerChangedByAnnotation]; got != "alice" {
			return fmt.Errorf("%s is %q", v1alpha1.APIServerChangedByAnnotation, got)
		}
		return nil
	})
}

// startGuard commits gitFiles, starts a manager with the Guard controller
// and the drift watcher as the guard's identity, creates the Guard "app" and
// waits until it applied Git. It returns the audit records.
func startGuard(t *testing.T, e *harness.Env) *harness.Records {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	log := testr.New(t)
	repo, err := e.Git.NewRepo("app")
	if err != nil {
		t.Fatal(err)
	}
	for name, text := range gitFiles {
		if err := repo.WriteFile(name, text); err != nil {
			t.Fatal(err)
		}
	}
	rev, err := repo.CommitAndPush("objects to guard")
	if err != nil {
		t.Fatal(err)
	}
	guardCfg, err := clientcmd.BuildConfigFromFlags("", e.GuardKubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	mgr, err := ctrl.NewManager(e.Fast(guardCfg), ctrl.Options{Scheme: app.Scheme(), Logger: log, Metrics: metricsserver.Options{BindAddress: "0"}})
	if err != nil {
		t.Fatal(err)
	}
	recs := &harness.Records{}
	auditLog := audit.NewLogger(log, 100, audit.NewWriterSink("records", recs))
	if err := mgr.Add(auditLog); err != nil {
		t.Fatal(err)
	}
	watcher, applier, err := addWatcher(mgr, e.Fast(guardCfg), auditLog, log)
	if err != nil {
		t.Fatal(err)
	}
	rec := &reconcile.GuardReconciler{
		Client: mgr.GetClient(), Fetcher: source.NewGitFetcher(filepath.Join(e.Dir, "gitcache"), log), Store: watcher.Store,
		Applier: applier, Audit: auditLog, Drift: watcher, SecretNamespace: "default",
		DefaultInterval: time.Hour, Log: log,
	}
	if err := rec.SetupWithManager(mgr); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("manager: %v", err)
		}
	})

	g := &v1alpha1.Guard{ObjectMeta: metav1.ObjectMeta{Name: "app"}, Spec: v1alpha1.GuardSpec{
		Git: &v1alpha1.GitSource{URL: e.Git.URL("app"), Ref: "main"}, Interval: metav1.Duration{Duration: time.Hour}, Ignore: ignoreRules,
	}}
	if err := e.Admin.Create(ctx, g); err != nil {
		t.Fatal(err)
	}
	wait.Eventually(t, 60*time.Second, "guard app Ready at "+rev[:7], func() error {
		if err := e.Admin.Get(ctx, client.ObjectKeyFromObject(g), g); err != nil {
			return err
		}
		if !meta.IsStatusConditionTrue(g.Status.Conditions, v1alpha1.ConditionReady) || g.Status.LastAppliedRevision != rev {
			return fmt.Errorf("revision %q, conditions %+v", g.Status.LastAppliedRevision, g.Status.Conditions)
		}
		return nil
	})
	return recs
}

// addWatcher adds the drift watcher to mgr as app wires it (addSelfHeal),
// with the built-in policy, the Guards' settings and the API server's
// stamps, and returns it with the apply engine it reverts through.
func addWatcher(mgr ctrl.Manager, cfg *rest.Config, auditLog *audit.Logger, log logr.Logger) (*selfheal.Watcher, *apply.Applier, error) {
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, nil, err
	}
	guards := settings.NewGuards(mgr.GetClient(), nil)
	applier := &apply.Applier{Client: mgr.GetClient(), Reader: mgr.GetAPIReader(), Rules: guards.IgnoreRules}
	w := &selfheal.Watcher{
		Dynamic: dyn, Mapper: mgr.GetRESTMapper(), Store: render.NewStore(), Applier: applier,
		Policy: policy.NewEngine(policy.Config{GuardUsers: []string{"driftguard"}}, log.WithName("policy")), Settings: guards,
		Audit: auditLog, LabelKey: apply.GuardLabel, APIServerStamps: func(string, schema.GroupVersionKind) bool { return true }, Log: log.WithName("drift"),
	}
	applier.Live = w
	return w, applier, mgr.Add(w)
}

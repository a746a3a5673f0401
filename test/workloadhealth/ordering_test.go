package workloadhealth

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/driftguard/driftguard/api/v1alpha1"
	"github.com/driftguard/driftguard/apply"
	"github.com/driftguard/driftguard/audit"
	"github.com/driftguard/driftguard/devenv"
	"github.com/driftguard/driftguard/health"
	"github.com/driftguard/driftguard/reconcile"
	"github.com/driftguard/driftguard/test/wait"
)

// hookJob is a Job with the given metadata lines (name or generateName,
// annotations) whose one pod completes, or fails when fail is set (the
// simulated cluster fails pods annotated driftguard.io/test-fail). Not
// only hooks: TestJobs makes its Guards' Jobs with it.
func hookJob(ns, meta string, fail bool) string {
	podMeta := ""
	if fail {
		podMeta = fmt.Sprintf("    metadata:\n      annotations:\n        %s: \"true\"\n", devenv.FailPodAnnotation)
	}
	return fmt.Sprintf(`apiVersion: batch/v1
kind: Job
metadata:
  namespace: %s
%s
spec:
  backoffLimit: 0
  template:
%s    spec:
      restartPolicy: Never
      containers:
        - name: task
          image: busybox:1.36
          command: ["true"]
`, ns, strings.TrimRight(meta, "\n"), podMeta)
}

// withAnnotations puts metadata annotations into a manifest whose
// metadata ends with its namespace line.
func withAnnotations(manifest, ns, annotations string) string {
	return strings.Replace(manifest, "  namespace: "+ns+"\n", "  namespace: "+ns+"\n  annotations:\n"+annotations, 1)
}

// availableSince is when the Deployment's Available condition became True.
func availableSince(t *testing.T, ns, name string) time.Time {
	t.Helper()
	var d appsv1.Deployment
	if err := h.Admin.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, &d); err != nil {
		t.Fatal(err)
	}
	for _, c := range d.Status.Conditions {
		if c.Type == appsv1.DeploymentAvailable && c.Status == corev1.ConditionTrue {
			return c.LastTransitionTime.Time
		}
	}
	t.Fatalf("deployment %s/%s is not Available: %+v", ns, name, d.Status)
	return time.Time{}
}

func created(t *testing.T, obj client.Object, ns, name string) time.Time {
	t.Helper()
	if err := h.Admin.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, obj); err != nil {
		t.Fatal(err)
	}
	return obj.GetCreationTimestamp().Time
}

// guardReadyAt waits until the Guard is Ready and Healthy at rev.
func guardReadyAt(t *testing.T, name, rev string, timeout time.Duration) *v1alpha1.Guard {
	t.Helper()
	var g *v1alpha1.Guard
	wait.Eventually(t, timeout, fmt.Sprintf("guard %s Ready and Healthy at %.7s", name, rev), func() error {
		g = h.Guard(t, name)
		if !meta.IsStatusConditionTrue(g.Status.Conditions, v1alpha1.ConditionReady) || g.Status.LastAppliedRevision != rev || g.Status.Health != string(health.Healthy) {
			return fmt.Errorf("revision %.7s health %q conditions %+v", g.Status.LastAppliedRevision, g.Status.Health, g.Status.Conditions)
		}
		return nil
	})
	return g
}

// guardFailedWith waits until the Guard is Ready=False with reason and a
// message holding every one of want.
func guardFailedWith(t *testing.T, name, reason string, want ...string) *metav1.Condition {
	t.Helper()
	var c *metav1.Condition
	wait.Eventually(t, 120*time.Second, fmt.Sprintf("guard %s Ready=False %s", name, reason), func() error {
		g := h.Guard(t, name)
		c = meta.FindStatusCondition(g.Status.Conditions, v1alpha1.ConditionReady)
		if c == nil || c.Status != metav1.ConditionFalse || c.Reason != reason {
			return fmt.Errorf("conditions %+v", g.Status.Conditions)
		}
		for _, w := range want {
			if !strings.Contains(c.Message, w) {
				return fmt.Errorf("message %q lacks %q", c.Message, w)
			}
		}
		return nil
	})
	return c
}

// hookRecords are the audit records of a Guard's hooks, in order.
func hookRecords(guard string) []audit.Record {
	return h.Audit.Find(func(r audit.Record) bool {
		return r.Guard == guard && strings.HasPrefix(r.Reason, "hook ")
	})
}

func hookTrail(recs []audit.Record) string {
	var out []string
	for _, r := range recs {
		out = append(out, r.Object.Name+" "+r.Action)
	}
	return strings.Join(out, ", ")
}

// A repository of three waves: wave 1 a Deployment that takes a few
// seconds to become available, wave 2 a ConfigMap and a Deployment, wave 3
// a Service (Argo CD's annotation). With spec.wait each wave is created
// only once the one before it is healthy. A namespace editor who marks a
// managed object as a hook in the cluster does not escape self-heal; and
// when everything leaves Git, the highest wave is pruned first.
func TestSyncWaves(t *testing.T) {
	t.Parallel()
	const name = "hd-waves"
	ns := name
	ctx := context.Background()
	wave := func(n string) string { return "    " + reconcile.SyncWaveAnnotation + ": \"" + n + "\"\n" }
	repo := h.NewGuard(t, name, true, map[string]string{
		"namespace.yaml": namespace(ns),
		"db.yaml":        withAnnotations(deployment(ns, "db", "postgres:17", 2, 5, ""), ns, wave("1")),
		"app.yaml": withAnnotations("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: app-config\n  namespace: "+ns+"\ndata:\n  db: db."+ns+"\n", ns, wave("2")) +
			"---\n" + withAnnotations(deployment(ns, "web", "nginx:1.27", 1, 3, ""), ns, wave("2")),
		"service.yaml": withAnnotations(service(ns, "web"), ns, "    "+reconcile.ArgoSyncWaveAnnotation+": \"3\"\n"),
	}, func(s *v1alpha1.GuardSpec) { s.Wait = true; s.Timeout = &metav1.Duration{Duration: 2 * time.Minute} })
	guardReadyAt(t, name, repo.Initial, 150*time.Second)

	dbCreated := created(t, &appsv1.Deployment{}, ns, "db")
	dbAvailable := availableSince(t, ns, "db")
	cfgCreated := created(t, &corev1.ConfigMap{}, ns, "app-config")
	webCreated := created(t, &appsv1.Deployment{}, ns, "web")
	webAvailable := availableSince(t, ns, "web")
	svcCreated := created(t, &corev1.Service{}, ns, "web")
	t.Logf("db created %s, available %s; wave 2 created %s/%s, web available %s; service created %s",
		dbCreated.Format(time.TimeOnly), dbAvailable.Format(time.TimeOnly), cfgCreated.Format(time.TimeOnly),
		webCreated.Format(time.TimeOnly), webAvailable.Format(time.TimeOnly), svcCreated.Format(time.TimeOnly))
	// Timestamps have whole seconds: a wave created in the second its
	// predecessor became available is in order; minReadySeconds (5 and 3)
	// put the waves seconds apart, which an apply of everything at once
	// would not.
	for _, c := range []struct {
		what        string
		before      time.Time
		after       time.Time
		minDistance time.Duration
	}{
		{"wave 2's ConfigMap after db (wave 1) is available", dbAvailable, cfgCreated, 0},
		{"wave 2's Deployment after db (wave 1) is available", dbAvailable, webCreated, 0},
		{"wave 2 at least minReadySeconds after wave 1", dbCreated, cfgCreated, 5 * time.Second},
		{"the Service (wave 3) after web (wave 2) is available", webAvailable, svcCreated, 0},
		{"wave 3 at least minReadySeconds after wave 2", webCreated, svcCreated, 3 * time.Second},
	} {
		if c.after.Before(c.before) || c.after.Sub(c.before) < c.minDistance {
			t.Errorf("%s: %s, then %s", c.what, c.before.Format(time.TimeOnly), c.after.Format(time.TimeOnly))
		}
	}

	// The hook annotations of the live object count for nothing: the
	// ConfigMap stays managed, and its changed data is reverted.
	patch, _ := json.Marshal(map[string]any{
		"metadata": map[string]any{"annotations": map[string]string{apply.HelmHookAnnotation: "pre-install", apply.ArgoHookAnnotation: "Skip"}},
		"data":     map[string]string{"db": "attacker.example.com"},
	})
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "app-config"}}
	if err := h.Admin.Patch(ctx, cm, client.RawPatch(types.MergePatchType, patch), client.FieldOwner("namespace-editor")); err != nil {
		t.Fatal(err)
	}
	wait.Eventually(t, 60*time.Second, "the ConfigMap marked a hook in the cluster reverted", func() error {
		if err := h.Admin.Get(ctx, client.ObjectKeyFromObject(cm), cm); err != nil {
			return err
		}
		if cm.Data["db"] != "db."+ns {
			return fmt.Errorf("data %v", cm.Data)
		}
		return nil
	})

	// A wave Git spells wrong stops that revision, naming the object, the
	// file and the value; the revision in force stays in force.
	repo.Change(t, "a wave that is not a number", map[string]string{
		"service.yaml": withAnnotations(service(ns, "web"), ns, "    "+reconcile.ArgoSyncWaveAnnotation+": third\n"),
	})
	wait.Eventually(t, 60*time.Second, "guard Stalled InvalidSyncOrder", func() error {
		g := h.Guard(t, name)
		c := meta.FindStatusCondition(g.Status.Conditions, v1alpha1.ConditionStalled)
		if c == nil || c.Reason != v1alpha1.ReasonInvalidSyncOrder {
			return fmt.Errorf("conditions %+v", g.Status.Conditions)
		}
		for _, want := range []string{"service.yaml:1: Service " + ns + "/web", reconcile.ArgoSyncWaveAnnotation, `"third"`, repo.Initial[:7], "stays in force"} {
			if !strings.Contains(c.Message, want) {
				t.Errorf("Stalled message %q lacks %q", c.Message, want)
			}
		}
		if g.Status.LastAppliedRevision != repo.Initial {
			t.Errorf("revision in force %.7s, want %.7s", g.Status.LastAppliedRevision, repo.Initial)
		}
		return nil
	})

	// Everything but the namespace leaves Git: the Service (wave 3) is
	// pruned before the objects of wave 2, and those before db (wave 1).
	rev := repo.Change(t, "remove the app", nil, "db.yaml", "app.yaml", "service.yaml")
	guardReadyAt(t, name, rev, 90*time.Second)
	var pruned []string
	for _, r := range h.Audit.Find(func(r audit.Record) bool { return r.Guard == name && r.Type == audit.Prune }) {
		pruned = append(pruned, r.Object.Kind+"/"+r.Object.Name)
	}
	if len(pruned) != 4 || pruned[0] != "Service/web" || pruned[3] != "Deployment/db" ||
		!slices.Contains(pruned[1:3], "ConfigMap/app-config") || !slices.Contains(pruned[1:3], "Deployment/web") {
		t.Errorf("pruned in the order %v, want Service/web, then wave 2 (ConfigMap/app-config, Deployment/web), then Deployment/db", pruned)
	}
}

// helmChart is a chart with a ConfigMap, two pre-install Job hooks of
// different weights (one named, kept; one generateName, deleted once it
// succeeded), a post-upgrade Job hook, and a pre-upgrade Job hook that
// fails (values.failHook) and is deleted when it fails.
func helmChart(ns, message string, failHook bool) map[string]string {
	hook := func(meta string, fail bool) string { return hookJob(ns, meta, fail) }
	return map[string]string{
		"chart/Chart.yaml":               "apiVersion: v2\nname: shop\nversion: 0.1.0\n",
		"chart/values.yaml":              fmt.Sprintf("message: %s\nfailHook: %v\n", message, failHook),
		"chart/templates/configmap.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings\ndata:\n  message: {{ .Values.message | quote }}\n",
		"chart/templates/schema.yaml": hook(`  name: schema
  annotations:
    helm.sh/hook: pre-install
    helm.sh/hook-weight: "-5"`, false),
		"chart/templates/seed.yaml": hook(`  generateName: seed-
  annotations:
    helm.sh/hook: pre-install
    helm.sh/hook-weight: "0"
    helm.sh/hook-delete-policy: hook-succeeded`, false),
		"chart/templates/notify.yaml": hook(`  name: notify
  annotations:
    helm.sh/hook: post-upgrade
    helm.sh/hook-delete-policy: before-hook-creation`, false),
		"chart/templates/check.yaml": "{{- if .Values.failHook }}\n" + hook(`  name: check
  annotations:
    helm.sh/hook: pre-upgrade
    helm.sh/hook-delete-policy: hook-failed`, true) + "{{- end }}\n",
	}
}

// A chart's hooks run at their phase: pre-install hooks by weight before
// the chart's objects at the first sync, post-upgrade after them at a
// later one; a hook is never a managed object; a failing pre-upgrade hook
// fails the sync with its message and nothing of the revision is applied.
func TestHelmHooks(t *testing.T) {
	t.Parallel()
	const name = "hd-helm-hooks"
	ns := name
	ctx := context.Background()
	repo := h.NewGuard(t, name, true, helmChart(ns, "v1", false), func(s *v1alpha1.GuardSpec) {
		s.Git.Path = "chart"
		s.Helm = &v1alpha1.HelmSpec{Namespace: ns}
		s.CreateNamespace = true
		s.Timeout = &metav1.Duration{Duration: 2 * time.Minute}
	})
	g := guardReadyAt(t, name, repo.Initial, 120*time.Second)
	if g.Status.ManagedObjects != 1 {
		t.Errorf("status.managedObjects %d, want 1 (the ConfigMap; hooks are not managed)", g.Status.ManagedObjects)
	}

	// Install: schema (weight -5), then seed (weight 0), then the ConfigMap.
	var schema batchv1.Job
	cfgCreated := created(t, &corev1.ConfigMap{}, ns, "settings")
	created(t, &schema, ns, "schema")
	if schema.Status.CompletionTime == nil || cfgCreated.Before(schema.Status.CompletionTime.Time) {
		t.Errorf("the ConfigMap (created %s) before the pre-install hook completed (%v)", cfgCreated, schema.Status.CompletionTime)
	}
	if schema.Labels[reconcile.HookLabel] != name || schema.Labels[apply.GuardLabel] != "" {
		t.Errorf("hook labels %v: want %s=%s and no %s", schema.Labels, reconcile.HookLabel, name, apply.GuardLabel)
	}
	// Git gives the hook no labels: it has those the API server gives such
	// a Job (kubectl get jobs -l batch.kubernetes.io/job-name=schema finds
	// it), the values of its pod template's.
	uid := string(schema.UID)
	for k, v := range map[string]string{apply.JobNameLabel: "schema", apply.LegacyJobNameLabel: "schema",
		apply.ControllerUIDLabel: uid, apply.LegacyControllerUIDLabel: uid} {
		if schema.Labels[k] != v || schema.Spec.Template.Labels[k] != v {
			t.Errorf("hook Job %s label %s=%q, template %q; want %q", schema.Name, k, schema.Labels[k], schema.Spec.Template.Labels[k], v)
		}
	}
	trail := hookTrail(hookRecords(name))
	t.Logf("install hooks: %s", trail)
	if !strings.HasPrefix(trail, "schema created, schema succeeded, seed-") || !strings.Contains(trail, "succeeded, seed-") || !strings.HasSuffix(trail, " deleted") {
		t.Errorf("install hooks ran %q: want schema, then seed-… created, succeeded and deleted (hook-succeeded)", trail)
	}
	var jobs batchv1.JobList
	if err := h.Admin.List(ctx, &jobs, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	for _, j := range jobs.Items {
		if j.Name != "schema" {
			t.Errorf("job %s exists after the install: only schema should (seed- is deleted, notify is post-upgrade)", j.Name)
		}
	}

	// Upgrade: the post-upgrade hook runs after the ConfigMap changed; the
	// pre-install hooks do not run again.
	installed := len(hookRecords(name))
	rev := repo.Change(t, "message v2", helmChart(ns, "v2", false))
	guardReadyAt(t, name, rev, 120*time.Second)
	var notify batchv1.Job
	created(t, &notify, ns, "notify")
	if notify.Status.Succeeded != 1 {
		t.Errorf("notify: %+v", notify.Status)
	}
	upgrade := hookRecords(name)[installed:]
	if got := hookTrail(upgrade); got != "notify created, notify succeeded" {
		t.Errorf("upgrade hooks %q, want notify alone", got)
	}
	applied := h.Audit.Find(func(r audit.Record) bool {
		return r.Guard == name && r.Type == audit.Apply && r.Operation == "APPLY" && r.Object.Name == "settings" && r.Source != nil && r.Source.Revision == rev
	})
	if len(applied) == 0 || len(upgrade) == 0 || upgrade[0].Time.Before(applied[0].Time) {
		t.Errorf("post-upgrade hook at %v, ConfigMap applied %v: want the hook after", upgrade, applied)
	}
	var again batchv1.Job
	created(t, &again, ns, "schema")
	if again.UID != schema.UID {
		t.Errorf("the pre-install hook ran again at an upgrade")
	}
	// Nobody fought over its server-given labels: written once by the
	// guard's create and label patch, never again.
	if !maps.Equal(again.Labels, schema.Labels) {
		t.Errorf("hook Job labels changed at the upgrade: %v, were %v", again.Labels, schema.Labels)
	}
	if g := guardReadyAt(t, name, rev, 10*time.Second); g.Status.DriftedObjects != 0 || g.Status.ManagedObjects != 1 {
		t.Errorf("after the upgrade: %d drifted, %d managed objects (%v); want 0 and 1: a hook is never compared", g.Status.DriftedObjects, g.Status.ManagedObjects, g.Status.Drifted)
	}

	// A pre-upgrade hook that fails fails the sync, with its message; the
	// revision's objects are not applied; hook-failed deletes it.
	repo.Change(t, "a failing check", helmChart(ns, "v3", true))
	c := guardFailedWith(t, name, v1alpha1.ReasonHookFailed, "PreSync hook Job "+ns+"/check", "(chart/templates/check.yaml)", "BackoffLimitExceeded")
	t.Logf("Ready=False %s: %s", c.Reason, c.Message)
	var cm corev1.ConfigMap
	created(t, &cm, ns, "settings")
	if cm.Data["message"] != "v2" {
		t.Errorf("the ConfigMap was applied although its pre-upgrade hook failed: %v", cm.Data)
	}
	h.Audit.Wait(t, 30*time.Second, "check deleted (hook-failed)", func(r audit.Record) bool {
		return r.Guard == name && r.Object.Name == "check" && r.Action == "deleted"
	})
}

// An Argo CD layout: a PreSync Job, a Deployment in wave 1 and a Service
// in wave 2, a PostSync Job (generateName, HookSucceeded). Then the
// PostSync Job fails: the SyncFail hook runs and the Guard says why.
func TestArgoHooksAndWaves(t *testing.T) {
	t.Parallel()
	const name = "hd-argo"
	ns := name
	argoWave := func(n string) string { return "    argocd.argoproj.io/sync-wave: \"" + n + "\"\n" }
	files := func(failSmoke bool) map[string]string {
		f := map[string]string{
			"namespace.yaml":  namespace(ns),
			"deployment.yaml": withAnnotations(deployment(ns, "web", "nginx:1.27", 2, 3, ""), ns, argoWave("1")),
			"service.yaml":    withAnnotations(service(ns, "web"), ns, argoWave("2")),
			"presync-job.yaml": hookJob(ns, `  name: migrate
  annotations:
    argocd.argoproj.io/hook: PreSync
    argocd.argoproj.io/hook-delete-policy: BeforeHookCreation`, false),
			"postsync-job.yaml": hookJob(ns, `  generateName: smoke-
  annotations:
    argocd.argoproj.io/hook: PostSync
    argocd.argoproj.io/hook-delete-policy: HookSucceeded`, failSmoke),
		}
		if failSmoke {
			f["syncfail-job.yaml"] = hookJob(ns, `  name: cleanup
  annotations:
    argocd.argoproj.io/hook: SyncFail`, false)
		}
		return f
	}
	repo := h.NewGuard(t, name, true, files(false), func(s *v1alpha1.GuardSpec) {
		s.Wait = true
		s.Timeout = &metav1.Duration{Duration: 2 * time.Minute}
	})
	guardReadyAt(t, name, repo.Initial, 150*time.Second)
	var migrate batchv1.Job
	created(t, &migrate, ns, "migrate")
	webCreated := created(t, &appsv1.Deployment{}, ns, "web")
	webAvailable := availableSince(t, ns, "web")
	svcCreated := created(t, &corev1.Service{}, ns, "web")
	if migrate.Status.CompletionTime == nil || webCreated.Before(migrate.Status.CompletionTime.Time) {
		t.Errorf("the Deployment (created %s) before the PreSync hook completed (%v)", webCreated, migrate.Status.CompletionTime)
	}
	if svcCreated.Before(webAvailable) || svcCreated.Sub(webCreated) < 3*time.Second {
		t.Errorf("the Service (wave 2, created %s) before the Deployment (wave 1, created %s) was available (%s)", svcCreated, webCreated, webAvailable)
	}
	recs := hookRecords(name)
	trail := hookTrail(recs)
	t.Logf("hooks: %s", trail)
	if !strings.HasPrefix(trail, "migrate created, migrate succeeded, smoke-") || !strings.HasSuffix(trail, "deleted") {
		t.Errorf("hooks ran %q: want migrate, then smoke-… created, succeeded, deleted", trail)
	}
	for _, r := range recs {
		if strings.HasPrefix(r.Object.Name, "smoke-") && r.Action == "created" && r.Time.Before(svcCreated) {
			t.Errorf("the PostSync hook was created at %s, before the Service (%s)", r.Time, svcCreated)
		}
	}

	// The PostSync hook fails: the sync fails with its message, the
	// SyncFail hook runs; the PreSync hook ran again (a new object).
	before := len(recs)
	t.Cleanup(func() {
		if !t.Failed() {
			return
		}
		for _, r := range hookRecords(name) {
			t.Logf("record %s %s %s %s %s", r.Time.Format(time.TimeOnly), r.Reason, r.Object.Name, r.Action, r.Error)
		}
		var jobs batchv1.JobList
		_ = h.Admin.List(context.Background(), &jobs, client.InNamespace(ns))
		for _, j := range jobs.Items {
			t.Logf("job %s uid %s labels %v created %s deleting %v finalizers %v", j.Name, j.UID, j.Labels, j.CreationTimestamp, j.DeletionTimestamp, j.Finalizers)
		}
	})
	repo.Change(t, "a failing smoke test", files(true))
	guardFailedWith(t, name, v1alpha1.ReasonHookFailed, "PostSync hook Job "+ns+"/smoke-", "BackoffLimitExceeded")
	h.Audit.Wait(t, 60*time.Second, "the SyncFail hook succeeded", func(r audit.Record) bool {
		return r.Guard == name && r.Object.Name == "cleanup" && r.Action == "succeeded"
	})
	var rerun batchv1.Job
	created(t, &rerun, ns, "migrate")
	if rerun.UID == migrate.UID {
		t.Error("the PreSync hook did not run again at the next sync")
	}
	failed := hookTrail(hookRecords(name)[before:])
	t.Logf("hooks of the failed sync: %s", failed)
	if !strings.HasPrefix(failed, "migrate deleted, migrate created, migrate succeeded, smoke-") {
		t.Errorf("hooks of the failed sync %q: want the earlier migrate deleted (BeforeHookCreation) before it runs again", failed)
	}
	if recs := h.Audit.Find(func(r audit.Record) bool {
		return r.Guard == name && r.Object.Name == "migrate" && r.Action == "deleted" && r.Reason == "hook PreSync (before-hook-creation)"
	}); len(recs) == 0 {
		t.Error("no audit record of the earlier migrate deleted before-hook-creation")
	}
}

package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/driftguard/driftguard/api/v1alpha1"
	"github.com/driftguard/driftguard/test/wait"
)

// files is a namespace, a ConfigMap and a Deployment in it.
func files(ns, greeting string) map[string]string {
	return map[string]string{"all.yaml": fmt.Sprintf(`apiVersion: v1
kind: Namespace
metadata:
  name: %[1]s
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: settings
  namespace: %[1]s
data:
  greeting: %[2]s
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  namespace: %[1]s
spec:
  replicas: 1
  selector:
    matchLabels: {app: web}
  template:
    metadata:
      labels: {app: web}
    spec:
      containers:
      - name: web
        image: registry.invalid/web:1
`, ns, greeting)}
}

func hourly(s *v1alpha1.GuardSpec) { s.Interval = metav1.Duration{Duration: time.Hour} }

func dryrun(s *v1alpha1.GuardSpec) { s.Enforcement = v1alpha1.EnforcementDryRun }

func noSelfHeal(s *v1alpha1.GuardSpec) { f := false; s.SelfHeal = &f }

func greeting(t *testing.T, ns string) string {
	t.Helper()
	var cm corev1.ConfigMap
	if err := h.Admin.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "settings"}, &cm); err != nil {
		t.Fatal(err)
	}
	return cm.Data["greeting"]
}

func setGreeting(t *testing.T, ns, v string) {
	t.Helper()
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "settings"}}
	patch := fmt.Sprintf(`{"data":{"greeting":%q}}`, v)
	if err := h.Admin.Patch(context.Background(), cm, client.RawPatch(types.MergePatchType, []byte(patch))); err != nil {
		t.Fatal(err)
	}
}

// line returns the line of out that starts with prefix.
func line(t *testing.T, out, prefix string) string {
	t.Helper()
	for _, l := range strings.Split(out, "\n") {
		if strings.HasPrefix(l, prefix) {
			return l
		}
	}
	t.Fatalf("no line starting with %q in:\n%s", prefix, out)
	return ""
}

func TestGetGuards(t *testing.T) {
	t.Parallel()
	const name, ns = "cli-get", "cli-get"
	repo := h.NewGuard(t, name, false, files(ns, "hello"))
	h.WaitApplied(t, name, repo.Initial)
	var g *v1alpha1.Guard
	wait.Eventually(t, 30*time.Second, "sync summary", func() error {
		g = h.Guard(t, name)
		if g.Status.Sync == nil || g.Status.Sync.InSync != 3 || g.Status.Health == "" {
			return fmt.Errorf("status.sync %+v, health %q", g.Status.Sync, g.Status.Health)
		}
		return nil
	})

	out, errOut, code := cli(t, "get", "guards")
	if code != 0 {
		t.Fatalf("get guards: exit %d: %s", code, errOut)
	}
	header := strings.Fields(line(t, out, "NAME"))
	if got := strings.Join(header, " "); got != "NAME READY REVISION HEALTH DRIFT SYNC SUSPENDED AGE" {
		t.Errorf("header %q", got)
	}
	f := strings.Fields(line(t, out, name+" "))
	want := []string{name, "True", repo.Initial, g.Status.Health, "0", "3/3", "false"}
	if len(f) != 8 || strings.Join(f[:7], " ") != strings.Join(want, " ") {
		t.Errorf("row %q, want %q and an age", f, want)
	}

	out, _, code = cli(t, "get", "guards", "-o", "wide", "-A")
	if f := strings.Fields(line(t, out, name+" ")); code != 0 || len(f) < 10 || f[8] != "-" {
		t.Errorf("get guards -o wide -A: exit %d:\n%s", code, out)
	}
	if got := strings.Fields(line(t, out, "NAME")); len(got) != 10 || got[8] != "PENDING" || got[9] != "STATUS" {
		t.Errorf("wide header %q", got)
	}

	out, errOut, code = cli(t, "get", "guard", name, "-o", "json")
	if code != 0 {
		t.Fatalf("get guard -o json: exit %d: %s", code, errOut)
	}
	var got v1alpha1.Guard
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatalf("-o json: %v\n%s", err, out)
	}
	if got.Kind != "Guard" || got.Name != name || got.Status.LastAppliedRevision != repo.Initial || got.Spec.Git.URL != repo.URL {
		t.Errorf("-o json: %+v", got)
	}

	out, _, code = cli(t, "get", "guards", "-o", "yaml")
	if code != 0 || !strings.Contains(out, "kind: List") || !strings.Contains(out, "name: "+name+"\n") || !strings.Contains(out, "lastAppliedRevision: "+repo.Initial) {
		t.Errorf("-o yaml: exit %d:\n%s", code, out)
	}

	_, errOut, code = cli(t, "get", "guard", "cli-get-absent")
	if code != 1 || !strings.Contains(errOut, `guard cli-get-absent:`) || !strings.Contains(errOut, "not found") {
		t.Errorf("absent guard: exit %d: %s", code, errOut)
	}
	_, errOut, code = cli(t, "get", "guards", "-o", "xml")
	if code != 1 || !strings.Contains(errOut, `--output "xml"`) {
		t.Errorf("-o xml: exit %d: %s", code, errOut)
	}
}

func TestReconcileGuard(t *testing.T) {
	t.Parallel()
	const name, ns = "cli-reconcile", "cli-reconcile"
	// An hourly interval and no push notification: only the request
	// makes the guard see the new revision within the test.
	repo := h.NewGuard(t, name, false, files(ns, "first"), hourly)
	h.WaitApplied(t, name, repo.Initial)
	rev := repo.Change(t, "second", files(ns, "second"))

	out, errOut, code := cli(t, "reconcile", "guard", name, "--timeout", "90s")
	if code != 0 {
		t.Fatalf("reconcile: exit %d\n%s\n%s", code, out, errOut)
	}
	if !strings.Contains(out, "guard "+name+": revision "+rev+", Ready=True") {
		t.Errorf("reconcile printed:\n%s", out)
	}
	if got := greeting(t, ns); got != "second" {
		t.Errorf("greeting %q after reconcile, want second", got)
	}
	g := h.Guard(t, name)
	if req := g.Annotations[v1alpha1.ReconcileRequestedAnnotation]; req == "" || g.Status.LastHandledReconcileAt != req {
		t.Errorf("annotation %q, status.lastHandledReconcileAt %q", req, g.Status.LastHandledReconcileAt)
	}
	if _, ok := g.Annotations[v1alpha1.ReconcileSourceAnnotation]; ok {
		t.Errorf("reconcile without --with-source set %s", v1alpha1.ReconcileSourceAnnotation)
	}

	out, errOut, code = cli(t, "reconcile", "guard", name, "--with-source")
	if code != 0 || !strings.Contains(out, "revision "+rev+", Ready=True") {
		t.Fatalf("reconcile --with-source: exit %d\n%s\n%s", code, out, errOut)
	}
	g = h.Guard(t, name)
	if req := g.Annotations[v1alpha1.ReconcileRequestedAnnotation]; g.Annotations[v1alpha1.ReconcileSourceAnnotation] != req || g.Status.LastHandledReconcileAt != req {
		t.Errorf("--with-source: annotations %v, handled %q", g.Annotations, g.Status.LastHandledReconcileAt)
	}

	_, errOut, code = cli(t, "reconcile", "guard", "cli-reconcile-absent")
	if code != 1 || !strings.Contains(errOut, "cli-reconcile-absent") || !strings.Contains(errOut, "not found") {
		t.Errorf("absent guard: exit %d: %s", code, errOut)
	}
}

// TestReconcileIsNoApproval: a reconcile of a Guard with sync: manual
// fetches the new revision and leaves it pending.
func TestReconcileIsNoApproval(t *testing.T) {
	t.Parallel()
	const name, ns = "cli-manual", "cli-manual"
	repo := h.NewGuard(t, name, false, files(ns, "first"), hourly, func(s *v1alpha1.GuardSpec) { s.Sync = v1alpha1.SyncManual })
	// The first revision waits for approval too.
	if out, errOut, code := cli(t, "sync", name, "--wait", "--timeout", "90s"); code != 0 {
		t.Fatalf("sync: exit %d\n%s\n%s", code, out, errOut)
	}
	h.WaitApplied(t, name, repo.Initial)
	rev := repo.Change(t, "second", files(ns, "second"))
	out, errOut, _ := cli(t, "reconcile", "guard", name, "--timeout", "90s")
	if !strings.Contains(out, "guard "+name+": revision "+repo.Initial) || !strings.Contains(out, "revision "+rev+" pending") {
		t.Errorf("reconcile of a manual Guard printed:\n%s\n%s", out, errOut)
	}
	if got := greeting(t, ns); got != "first" {
		t.Errorf("greeting %q: a reconcile applied a revision that waits for approval", got)
	}
}

func TestSuspendResume(t *testing.T) {
	t.Parallel()
	const name, ns = "cli-suspend", "cli-suspend"
	repo := h.NewGuard(t, name, false, files(ns, "from git"), dryrun)
	h.WaitApplied(t, name, repo.Initial)
	// Self-heal reverts a change while the Guard runs.
	setGreeting(t, ns, "by hand")
	wait.Eventually(t, 30*time.Second, "self-heal reverts", func() error {
		if g := greeting(t, ns); g != "from git" {
			return fmt.Errorf("greeting %q", g)
		}
		return nil
	})

	out, errOut, code := cli(t, "suspend", "guard", name)
	if code != 0 || !strings.Contains(out, "guard "+name+" suspended") {
		t.Fatalf("suspend: exit %d\n%s\n%s", code, out, errOut)
	}
	wait.Eventually(t, 30*time.Second, "Suspended condition", func() error {
		g := h.Guard(t, name)
		c := meta.FindStatusCondition(g.Status.Conditions, v1alpha1.ConditionSuspended)
		if !g.Spec.Suspend || c == nil || c.Status != metav1.ConditionTrue || !strings.Contains(c.Message, "drift not reverted") {
			return fmt.Errorf("spec.suspend %v, condition %+v", g.Spec.Suspend, c)
		}
		return nil
	})
	setGreeting(t, ns, "while suspended")
	// Self-heal answered within seconds above; a suspended Guard leaves
	// the change for several of its 2-second intervals.
	time.Sleep(6 * time.Second)
	if got := greeting(t, ns); got != "while suspended" {
		t.Fatalf("greeting %q: drift was reverted while the Guard was suspended", got)
	}
	_, errOut, code = cli(t, "reconcile", "guard", name)
	if code != 1 || !strings.Contains(errOut, "guard "+name+" is suspended") {
		t.Errorf("reconcile of a suspended Guard: exit %d: %s", code, errOut)
	}
	out, _, _ = cli(t, "get", "guards")
	if f := strings.Fields(line(t, out, name+" ")); len(f) < 7 || f[6] != "true" {
		t.Errorf("get guards SUSPENDED column: %q", f)
	}

	out, errOut, code = cli(t, "resume", "guard", name, "--timeout", "90s")
	if code != 0 || !strings.Contains(out, "guard "+name+" resumed") || !strings.Contains(out, "revision "+repo.Initial+", Ready=True") {
		t.Fatalf("resume: exit %d\n%s\n%s", code, out, errOut)
	}
	wait.Eventually(t, 30*time.Second, "drift reverted after resume", func() error {
		if g := greeting(t, ns); g != "from git" {
			return fmt.Errorf("greeting %q", g)
		}
		return nil
	})
	g := h.Guard(t, name)
	if g.Spec.Suspend || meta.FindStatusCondition(g.Status.Conditions, v1alpha1.ConditionSuspended) != nil {
		t.Errorf("after resume: spec.suspend %v, conditions %+v", g.Spec.Suspend, g.Status.Conditions)
	}
}

func TestTreeGuard(t *testing.T) {
	t.Parallel()
	const name, ns = "cli-tree", "cli-tree"
	repo := h.NewGuard(t, name, false, files(ns, "from git"), dryrun, noSelfHeal)
	h.WaitApplied(t, name, repo.Initial)
	setGreeting(t, ns, "by hand")
	wait.Eventually(t, 30*time.Second, "drift in status.sync", func() error {
		if s := h.Guard(t, name).Status.Sync; s == nil || s.OutOfSync != 1 || s.InSync != 2 {
			return fmt.Errorf("status.sync %+v", s)
		}
		return nil
	})

	out, errOut, code := cli(t, "tree", "guard", name, "-n", guardNS)
	if code != 0 {
		t.Fatalf("tree: exit %d\n%s\n%s", code, out, errOut)
	}
	lines := strings.Split(strings.TrimRight(out, "\n"), "\n")
	if len(lines) != 5 {
		t.Fatalf("tree: want 5 lines:\n%s", out)
	}
	if !strings.HasPrefix(lines[0], "Guard/"+name+"  revision "+repo.Initial+"  Ready=True") || !strings.Contains(lines[0], "drift 1") {
		t.Errorf("guard line %q", lines[0])
	}
	for i, want := range [][]string{
		{"├── Namespace/" + ns, "InSync", "Healthy"},
		{"└── " + ns},
		{"    ├── ConfigMap/settings", "OutOfSync (/data/greeting)", "Healthy"},
		// No Deployment controller runs on this API server: the
		// Deployment never reports progress.
		{"    └── Deployment/web", "InSync", "Progressing"},
	} {
		l := lines[i+1]
		if !strings.HasPrefix(l, want[0]) {
			t.Errorf("line %d %q, want it to start with %q", i+1, l, want[0])
		}
		for _, w := range want[1:] {
			if !strings.Contains(l, w) {
				t.Errorf("line %d %q, want %q", i+1, l, w)
			}
		}
	}

	_, errOut, code = cli(t, "tree", "guard", name, "-n", "cli-tree-nowhere")
	if code != 1 || !strings.Contains(errOut, "no inventory ConfigMap driftguard-inventory-"+name+" in namespace cli-tree-nowhere") {
		t.Errorf("tree in the wrong namespace: exit %d: %s", code, errOut)
	}
}

func TestEvents(t *testing.T) {
	t.Parallel()
	const name, ns, other = "cli-events", "cli-events", "cli-events-other"
	repo := h.NewGuard(t, name, false, files(ns, "x"))
	otherRepo := h.NewGuard(t, other, false, files(other, "x"))
	h.WaitApplied(t, name, repo.Initial)
	h.WaitApplied(t, other, otherRepo.Initial)
	// Events another controller makes: about a managed object, and about
	// one no Guard manages.
	ctx := context.Background()
	for obj, note := range map[string]string{"settings": "about the managed configmap", "stray": "about a stray configmap"} {
		ev := &eventsv1.Event{
			ObjectMeta:          metav1.ObjectMeta{Namespace: ns, GenerateName: "probe-"},
			EventTime:           metav1.NowMicro(),
			ReportingController: "example.com/prober", ReportingInstance: "prober-1",
			Action: "Probe", Reason: "Probed", Type: corev1.EventTypeWarning, Note: note,
			Regarding: corev1.ObjectReference{APIVersion: "v1", Kind: "ConfigMap", Namespace: ns, Name: obj},
		}
		if err := h.Admin.Create(ctx, ev); err != nil {
			t.Fatal(err)
		}
	}

	var out string
	wait.Eventually(t, 30*time.Second, "events of the Guard", func() error {
		var errOut string
		var code int
		out, errOut, code = cli(t, "events", "--for", "guard/"+name, "-n", guardNS)
		if code != 0 {
			return fmt.Errorf("exit %d: %s", code, errOut)
		}
		if !strings.Contains(out, "RevisionApplied") || !strings.Contains(out, "about the managed configmap") {
			return fmt.Errorf("output:\n%s", out)
		}
		return nil
	})
	for _, l := range strings.Split(out, "\n") {
		if strings.Contains(l, "RevisionApplied") && (!strings.Contains(l, "Guard/"+name) || !strings.Contains(l, "applied revision "+repo.Initial[:7])) {
			t.Errorf("RevisionApplied line %q", l)
		}
		if strings.Contains(l, "Probed") && !strings.Contains(l, "ConfigMap/"+ns+"/settings") {
			t.Errorf("event line %q", l)
		}
	}
	if strings.Contains(out, "stray") || strings.Contains(out, "Guard/"+other) {
		t.Errorf("--for guard/%s printed events of other objects:\n%s", name, out)
	}
	if !strings.HasPrefix(out, "LAST SEEN") {
		t.Errorf("no header:\n%s", out)
	}

	out, _, _ = cli(t, "events", "-n", guardNS)
	if !strings.Contains(out, "Guard/"+other) || !strings.Contains(out, "Guard/"+name) || strings.Contains(out, "stray") {
		t.Errorf("events of every Guard:\n%s", out)
	}
	out, _, _ = cli(t, "events", "--for", "guard/"+name, "--types", "Warning", "-n", guardNS)
	if strings.Contains(out, "RevisionApplied") || !strings.Contains(out, "about the managed configmap") {
		t.Errorf("--types Warning:\n%s", out)
	}
	_, errOut, code := cli(t, "events", "--for", "deployment/web")
	if code != 1 || !strings.Contains(errOut, `--for "deployment/web": want guard/NAME`) {
		t.Errorf("--for deployment/web: exit %d: %s", code, errOut)
	}
}

// TestLogsFindsTheGuardPods: logs finds the pods of the guard's Deployment
// through the API server and asks for their logs. This API server has no
// kubelet, so no pod runs and the request for its log fails: the error
// names the pods logs chose (they are bound to a node that does not
// exist; the API server answers an empty log for a pod bound to none). The filtering by Guard is tested on log lines
// in cmd/driftguard (TestFilterGuardLogs).
func TestLogsFindsTheGuardPods(t *testing.T) {
	t.Parallel()
	const ns = "cli-logs"
	ctx := context.Background()
	if err := h.Admin.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		t.Fatal(err)
	}
	sel := map[string]string{"app.kubernetes.io/name": "driftguard", "app.kubernetes.io/instance": "dg"}
	labels := map[string]string{"app.kubernetes.io/part-of": "driftguard"}
	for k, v := range sel {
		labels[k] = v
	}
	podSpec := corev1.PodSpec{NodeName: "cli-logs-no-such-node", Containers: []corev1.Container{{Name: "driftguard", Image: "registry.invalid/driftguard:1"}}}
	dep := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "dg-driftguard", Labels: labels},
		Spec: appsv1.DeploymentSpec{Selector: &metav1.LabelSelector{MatchLabels: sel},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: sel}, Spec: podSpec}},
	}
	// A Deployment of something else, and pods that are not the guard's.
	otherSel := map[string]string{"app": "web"}
	other := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web", Labels: otherSel},
		Spec: appsv1.DeploymentSpec{Selector: &metav1.LabelSelector{MatchLabels: otherSel},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: otherSel}, Spec: podSpec}},
	}
	objs := []client.Object{dep, other,
		&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "dg-driftguard-a", Labels: sel}, Spec: podSpec},
		&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "dg-driftguard-b", Labels: sel}, Spec: podSpec},
		&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web-a", Labels: otherSel}, Spec: podSpec},
	}
	for _, o := range objs {
		if err := h.Admin.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	_, errOut, code := cli(t, "logs", "-n", ns, "--guard", "shop")
	if code != 1 {
		t.Fatalf("logs: exit %d: %s", code, errOut)
	}
	for _, want := range []string{"logs of pod " + ns + "/dg-driftguard-a", "logs of pod " + ns + "/dg-driftguard-b"} {
		if !strings.Contains(errOut, want) {
			t.Errorf("logs: want %q in: %s", want, errOut)
		}
	}
	if strings.Contains(errOut, "web-a") {
		t.Errorf("logs asked for the log of a pod that is not the guard's: %s", errOut)
	}

	_, errOut, code = cli(t, "logs", "-n", "default")
	if code != 1 || !strings.Contains(errOut, "no Deployment labelled app.kubernetes.io/part-of=driftguard in namespace default") {
		t.Errorf("logs where no guard runs: exit %d: %s", code, errOut)
	}
}

func TestCompletion(t *testing.T) {
	t.Parallel()
	repo := h.NewGuard(t, "cli-comp-a", false, files("cli-comp-a", "x"))
	h.NewGuard(t, "cli-comp-b", false, files("cli-comp-b", "x"))
	h.WaitApplied(t, "cli-comp-a", repo.Initial)
	for _, tc := range []struct {
		args []string
		want []string
	}{
		{[]string{"reconcile", "guard", "cli-comp"}, []string{"cli-comp-a", "cli-comp-b"}},
		{[]string{"suspend", "guard", "cli-comp-a", "cli-comp"}, []string{"cli-comp-b"}},
		{[]string{"tree", "guard", "cli-comp-b"}, []string{"cli-comp-b"}},
		{[]string{"get", "guards", "cli-comp-"}, []string{"cli-comp-a", "cli-comp-b"}},
		{[]string{"events", "--for", "guard/cli-comp-a"}, []string{"guard/cli-comp-a"}},
		{[]string{"logs", "--guard", "cli-comp-a"}, []string{"cli-comp-a"}},
		{[]string{"tree", "guard", "cli-comp-a", ""}, nil},
	} {
		out, errOut, code := cli(t, append([]string{"__complete"}, tc.args...)...)
		if code != 0 {
			t.Fatalf("__complete %v: exit %d: %s", tc.args, code, errOut)
		}
		lines := strings.Split(strings.TrimRight(out, "\n"), "\n")
		if got := strings.Join(lines[:len(lines)-1], ","); got != strings.Join(tc.want, ",") || lines[len(lines)-1] != ":4" {
			t.Errorf("__complete %v = %q (directive %s), want %q", tc.args, got, lines[len(lines)-1], tc.want)
		}
	}
	for shell, want := range map[string]string{"bash": "__start_driftguard", "zsh": "#compdef driftguard", "fish": "complete -c driftguard"} {
		out, errOut, code := cli(t, "completion", shell)
		if code != 0 || !strings.Contains(out, want) {
			t.Errorf("completion %s: exit %d, %q not in output (%s)", shell, code, want, errOut)
		}
	}
}

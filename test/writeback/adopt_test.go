package writeback

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/driftguard/driftguard/api/v1alpha1"
	"github.com/driftguard/driftguard/audit"
	"github.com/driftguard/driftguard/decision"
	"github.com/driftguard/driftguard/test/wait"
)

const adoptManifests = `# The shop's web tier.
apiVersion: v1
kind: Namespace
metadata:
  name: adopt
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  namespace: adopt
  labels:
    app: web # the selector's label
spec:
  # three outside the sale
  replicas: 3
  selector:
    matchLabels: {app: web}
  template:
    metadata:
      labels: {app: web}
    spec:
      containers:
      - name: web
        image: "nginx:1.27" # pinned
        ports:
        - containerPort: 80
`

const breakGlassTTL = 15 * time.Second

func deployment(t *testing.T) *appsv1.Deployment {
	t.Helper()
	var d appsv1.Deployment
	if err := h.Admin.Get(context.Background(), client.ObjectKey{Namespace: "adopt", Name: "web"}, &d); err != nil {
		t.Fatal(err)
	}
	return &d
}

// TestAdoptBreakGlass: an SRE scales and patches a Deployment with a
// break-glass reason; adopt writes the live values into the Git file with
// its comments, the guard applies that commit, and nothing is reverted
// when the TTL ends.
func TestAdoptBreakGlass(t *testing.T) {
	repo := h.NewGuard(t, "adopt", true, map[string]string{"apps/web.yaml": adoptManifests}, func(s *v1alpha1.GuardSpec) {
		s.Git.Path = "apps"
		s.BreakGlassTTL = &metav1.Duration{Duration: breakGlassTTL}
	})
	h.WaitApplied(t, repo.Guard, repo.Initial)
	sam, _, err := h.Cluster.AddUser("sam", []string{"system:masters", "sre"})
	if err != nil {
		t.Fatal(err)
	}

	patch := `{"metadata":{"annotations":{"driftguard.io/break-glass":"INC-7: sale traffic"}},"spec":{"replicas":5,"template":{"spec":{"containers":[{"name":"web","image":"nginx:1.28"}]}}}}`
	if out, err := h.KubectlAs(t, sam, "patch", "deployment", "web", "-n", "adopt", "-p", patch); err != nil {
		t.Fatalf("break-glass patch by sam: %v: %s", err, out)
	}
	edited := time.Now()
	h.Audit.Wait(t, 10*time.Second, "break-glass drift kept", func(r audit.Record) bool {
		return r.Type == audit.Drift && r.Guard == repo.Guard && r.Rule == decision.RuleBreakGlass && r.User == "sam"
	})

	// A dry run shows the change and pushes nothing.
	out, errOut, err := driftguard(t, "adopt", "deploy/web", "-n", "adopt", "--kubeconfig", sam, "--dry-run")
	if err != nil {
		t.Fatalf("adopt --dry-run: %v\n%s%s", err, out, errOut)
	}
	for _, want := range []string{"-  replicas: 3", "+  replicas: 5", `+        image: "nginx:1.28" # pinned`, "dry run: would commit to branch main", "INC-7: sale traffic"} {
		if !strings.Contains(out, want) {
			t.Errorf("dry run output lacks %q:\n%s", want, out)
		}
	}
	if head := gitRun(t, gitClone(t, repo.URL), "rev-parse", "HEAD"); head != repo.Initial {
		t.Fatalf("the dry run pushed %s", head)
	}

	out, errOut, err = driftguard(t, "adopt", "deployment/web", "-n", "adopt", "--kubeconfig", sam)
	if err != nil {
		t.Fatalf("adopt: %v\n%s%s", err, out, errOut)
	}
	if !strings.Contains(out, "adopted 2 fields of Deployment adopt/web into apps/web.yaml (line 7)") ||
		!strings.Contains(out, "removed the driftguard.io/break-glass and driftguard.io/changed-by annotations") {
		t.Fatalf("adopt output:\n%s%s", out, errOut)
	}
	if time.Since(edited) > breakGlassTTL-2*time.Second {
		t.Fatalf("adopt took %s, too close to the break-glass TTL for the test to mean anything", time.Since(edited))
	}

	// Git holds the live values, and every comment and line of the file.
	clone := gitClone(t, repo.URL)
	sha := gitRun(t, clone, "rev-parse", "HEAD")
	got, err := os.ReadFile(filepath.Join(clone, "apps", "web.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	want := strings.Replace(strings.Replace(adoptManifests, "replicas: 3", "replicas: 5", 1), `"nginx:1.27"`, `"nginx:1.28"`, 1)
	if string(got) != want {
		t.Fatalf("apps/web.yaml after adopt:\n%s\nwant:\n%s", got, want)
	}
	msg := gitRun(t, clone, "log", "-1", "--format=%an|%B")
	for _, want := range []string{"sam|adopt the live state of Deployment adopt/web: INC-7: sale traffic", "/spec/replicas: 3 → 5",
		`/spec/template/spec/containers/0/image: "nginx:1.27" → "nginx:1.28"`, "Break-glass-reason: INC-7: sale traffic",
		"Changed-by: sam at ", "Adopted-by: sam", "Guard: adopt"} {
		if !strings.Contains(msg, want) {
			t.Errorf("commit message lacks %q:\n%s", want, msg)
		}
	}
	if parent := gitRun(t, clone, "rev-parse", "HEAD^"); parent != repo.Initial {
		t.Fatalf("the adoption's parent is %s, want %s", parent, repo.Initial)
	}

	// adopt waited for the guard to apply the commit.
	if g := h.Guard(t, repo.Guard); g.Status.LastAppliedRevision != sha {
		t.Fatalf("guard at %s after adopt, want %s", g.Status.LastAppliedRevision, sha)
	}
	d := deployment(t)
	if _, ok := d.Annotations[v1alpha1.BreakGlassAnnotation]; ok {
		t.Fatalf("break-glass annotation left: %v", d.Annotations)
	}
	if _, ok := d.Annotations[v1alpha1.ChangedByAnnotation]; ok {
		t.Fatalf("changed-by annotation left: %v", d.Annotations)
	}

	// The TTL passes (a deliberate wait: the scenario is its end), and
	// full reconciles run: nothing reverts.
	time.Sleep(time.Until(edited.Add(breakGlassTTL)))
	h.WaitReconciles(t, repo.Guard, 2)
	d = deployment(t)
	if *d.Spec.Replicas != 5 || d.Spec.Template.Spec.Containers[0].Image != "nginx:1.28" {
		t.Fatalf("after the TTL: replicas %d, image %s; want the adopted 5 and nginx:1.28", *d.Spec.Replicas, d.Spec.Template.Spec.Containers[0].Image)
	}
	if reverts := h.Audit.Find(func(r audit.Record) bool {
		return (r.Type == audit.Revert || r.Type == audit.Recreate) && r.Guard == repo.Guard
	}); len(reverts) > 0 {
		t.Fatalf("the guard reverted after the adoption: %+v", reverts)
	}
	if g := h.Guard(t, repo.Guard); g.Status.LastAppliedRevision != sha || g.Status.DriftedObjects != 0 {
		t.Fatalf("guard status: revision %s, %d drifted (%v)", g.Status.LastAppliedRevision, g.Status.DriftedObjects, g.Status.Drifted)
	}

	// Adopting again finds nothing to do.
	out, errOut, err = driftguard(t, "adopt", "deployment/web", "-n", "adopt", "--kubeconfig", sam)
	if err != nil || !strings.Contains(out, "in sync: Deployment adopt/web equals Git at "+sha[:7]) {
		t.Fatalf("second adopt: %v\n%s%s", err, out, errOut)
	}
}

// TestAdoptRefusals: bad input gets a clear error and commits nothing.
func TestAdoptRefusals(t *testing.T) {
	repo := h.NewGuard(t, "refuse", false, map[string]string{"all.yaml": `apiVersion: v1
kind: Namespace
metadata:
  name: refuse
---
apiVersion: v1
kind: Secret
metadata:
  name: creds
  namespace: refuse
stringData:
  password: hunter2
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: cfg
  namespace: refuse
data:
  a: "1"
`})
	h.WaitApplied(t, repo.Guard, repo.Initial)
	if err := h.Admin.Create(context.Background(), &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "unmanaged", Namespace: "refuse"},
		Spec: appsv1.DeploymentSpec{
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "x"}},
			Template: corev1PodTemplate(),
		},
	}); err != nil {
		t.Fatal(err)
	}
	admin := h.Cluster.AdminKubeconfig
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"secret", []string{"adopt", "secret/creds", "-n", "refuse"}, "adopt does not write Secret values into Git"},
		{"unmanaged", []string{"adopt", "deployment/unmanaged", "-n", "refuse"}, "Deployment refuse/unmanaged has no driftguard.io/guard label"},
		{"other guard", []string{"adopt", "configmap/cfg", "-n", "refuse", "--guard", "adopt"}, "carries driftguard.io/guard=refuse, not adopt"},
		{"missing", []string{"adopt", "configmap/nope", "-n", "refuse"}, "get ConfigMap refuse/nope"},
		{"bad kind", []string{"adopt", "widgets/x", "-n", "refuse"}, `kind "widgets": the cluster serves no such resource`},
		{"bad argument", []string{"adopt", "cfg", "-n", "refuse"}, `"cfg": want KIND/NAME`},
		{"token and password", []string{"adopt", "cm/cfg", "-n", "refuse", "--git-token", "t", "--git-password", "p"}, "--git-token excludes"},
		{"bad author", []string{"adopt", "cm/cfg", "-n", "refuse", "--author", "<<"}, `--author "<<"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			out, errOut, err := driftguard(t, append(tc.args, "--kubeconfig", admin)...)
			if err == nil || !strings.Contains(errOut, tc.want) {
				t.Fatalf("%v: %v\nstdout: %s\nstderr: %s\nwant %q", tc.args, err, out, errOut, tc.want)
			}
		})
	}
	wait.Eventually(t, 5*time.Second, "no commit", func() error {
		if head := gitRun(t, gitClone(t, repo.URL), "rev-parse", "HEAD"); head != repo.Initial {
			return fmt.Errorf("a refused adopt pushed %s", head)
		}
		return nil
	})
}

func corev1PodTemplate() corev1.PodTemplateSpec {
	return corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "x"}},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "x", Image: "x"}}},
	}
}

package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/driftguard/driftguard/api/v1alpha1"
	"github.com/driftguard/driftguard/audit"
	"github.com/driftguard/driftguard/devenv"
	"github.com/driftguard/driftguard/source"
	"github.com/driftguard/driftguard/test/sourceserver"
	"github.com/driftguard/driftguard/test/wait"
)

// The tests of this file drive a Guard of each kind of source other than
// Git through the same steps, on real servers on loopback: first apply, a
// change is a new revision applied, an unchanged source costs metadata
// requests only (from the server's request log), a server that is down
// keeps the last good revision and is retried, bad credentials name the
// Secret, and a corrupt artifact names itself and deletes nothing.

// newArtifactGuard creates a Guard with spec; it is deleted when the test ends.
func newArtifactGuard(t *testing.T, name string, spec v1alpha1.GuardSpec) {
	t.Helper()
	spec.Prune = true
	spec.Interval = metav1.Duration{Duration: 2 * time.Second}
	g := &v1alpha1.Guard{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: spec}
	if err := h.Admin.Create(context.Background(), g); err != nil {
		t.Fatalf("create guard %s: %v", name, err)
	}
	t.Cleanup(func() { _ = h.Admin.Delete(context.Background(), g) })
}

// waitNewRevision waits until the Guard is Ready with a revision other than
// prev applied, and returns it.
func waitNewRevision(t *testing.T, guard, prev string) string {
	t.Helper()
	var rev string
	wait.Eventually(t, 60*time.Second, fmt.Sprintf("guard %s applies a revision other than %q", guard, prev), func() error {
		g := h.Guard(t, guard)
		c := findCondition(g, v1alpha1.ConditionReady)
		if c == nil || c.Status != metav1.ConditionTrue || g.Status.LastAppliedRevision == prev {
			return fmt.Errorf("revision %q, conditions %+v", g.Status.LastAppliedRevision, g.Status.Conditions)
		}
		rev = g.Status.LastAppliedRevision
		return nil
	})
	return rev
}

func findCondition(g *v1alpha1.Guard, typ string) *metav1.Condition {
	for i := range g.Status.Conditions {
		if g.Status.Conditions[i].Type == typ {
			return &g.Status.Conditions[i]
		}
	}
	return nil
}

// noDownloadWhileUnchanged waits for at least three more metadata requests
// (reconciles of an unchanged source) and checks that nothing else was asked.
func noDownloadWhileUnchanged(t *testing.T, f *sourceserver.Front, metadata string) {
	t.Helper()
	n := len(f.Requests())
	wait.Eventually(t, 30*time.Second, "three reconciles of an unchanged source", func() error {
		if got := f.Since(n); len(got) < 3 {
			return fmt.Errorf("requests so far: %q", got)
		}
		return nil
	})
	for _, r := range f.Since(n) {
		if r != metadata {
			t.Fatalf("an unchanged source asked for more than %q: %q", metadata, f.Since(n))
		}
	}
}

// downAndBack stops the server, checks the last good revision stays in
// force and the Guard retries, then brings the server back.
func downAndBack(t *testing.T, guard string, f *sourceserver.Front, applied, ns, cm, value string) {
	t.Helper()
	f.Stop()
	g := waitCondition(t, guard, v1alpha1.ConditionReady, metav1.ConditionFalse, v1alpha1.ReasonFetchFailed, "stays in force")
	t.Logf("server down: %s", findCondition(g, v1alpha1.ConditionReady).Message)
	if g.Status.LastAppliedRevision != applied {
		t.Fatalf("applied revision %s while the server is down, want %s", g.Status.LastAppliedRevision, applied)
	}
	waitValue(t, ns, cm, value)
	if err := f.Start(); err != nil {
		t.Fatal(err)
	}
	waitCondition(t, guard, v1alpha1.ConditionReady, metav1.ConditionTrue, "", "applied revision "+source.ShortRevision(applied))
}

// badCredentials writes wrong into the Secret's key, waits for a condition
// naming the Secret, and restores the Secret.
func badCredentials(t *testing.T, guard string, ref *v1alpha1.SecretReference, field, key string) {
	t.Helper()
	ctx := context.Background()
	var s corev1.Secret
	if err := h.Admin.Get(ctx, types.NamespacedName{Namespace: ref.Namespace, Name: ref.Name}, &s); err != nil {
		t.Fatal(err)
	}
	good := s.Data[key]
	s.Data[key] = []byte("wrong-" + string(good))
	if err := h.Admin.Update(ctx, &s); err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprintf("check the credentials in Secret %s/%s (%s.secretRef)", ref.Namespace, ref.Name, field)
	g := waitCondition(t, guard, v1alpha1.ConditionReady, metav1.ConditionFalse, v1alpha1.ReasonFetchFailed, want)
	msg := findCondition(g, v1alpha1.ConditionReady).Message
	if strings.Contains(msg, string(good)) {
		t.Fatalf("the condition shows a credential: %s", msg)
	}
	t.Logf("bad credentials: %s", msg)
	s.Data[key] = good
	if err := h.Admin.Update(ctx, &s); err != nil {
		t.Fatal(err)
	}
	waitCondition(t, guard, v1alpha1.ConditionReady, metav1.ConditionTrue, "", "")
}

func TestOCISource(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	const ns, guard = "oci-source", "oci-source"
	reg, err := sourceserver.StartRegistry()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(reg.Close)
	reg.SetAuth("robot", "registry-pass")
	creds := secret(t, "oci-source-creds", "registry", map[string][]byte{"username": []byte("robot"), "password": []byte("registry-pass")})
	d1, err := reg.PushFiles(ctx, "deploy", "stable", map[string]string{"ns.yaml": namespace(ns), "cm.yaml": configMap(ns, "cm", "one")})
	if err != nil {
		t.Fatal(err)
	}
	newArtifactGuard(t, guard, v1alpha1.GuardSpec{OCI: &v1alpha1.OCISource{URL: reg.URL("deploy"), Tag: "stable", Insecure: true, SecretRef: creds}})

	// First apply: the revision is tag@digest, in the status and in audit records.
	rev1 := "stable@" + d1
	h.WaitApplied(t, guard, rev1)
	waitValue(t, ns, "cm", "one")
	h.Audit.Wait(t, 10*time.Second, "apply record of the artifact", func(r audit.Record) bool {
		return r.Type == audit.Apply && r.Guard == guard && r.Object.Name == "cm" && r.Source != nil &&
			r.Source.Revision == rev1 && r.Source.URL == reg.URL("deploy") && r.Source.Path == "cm.yaml"
	})
	out, err := h.Kubectl(t, "patch", "configmap", "cm", "-n", ns, "--type=merge", "-p", `{"data":{"value":"by hand"}}`)
	if err == nil || !strings.Contains(out, "denied") || !strings.Contains(out, reg.URL("deploy")) || !strings.Contains(out, "cm.yaml") {
		t.Fatalf("manual change of an artifact's object: %v %s", err, out)
	}

	// A change is a new revision, applied.
	d2, err := reg.PushFiles(ctx, "deploy", "stable", map[string]string{"ns.yaml": namespace(ns), "cm.yaml": configMap(ns, "cm", "two")})
	if err != nil {
		t.Fatal(err)
	}
	rev2 := "stable@" + d2
	h.WaitApplied(t, guard, rev2)
	waitValue(t, ns, "cm", "two")

	noDownloadWhileUnchanged(t, reg.Front, "HEAD /v2/deploy/manifests/stable")
	downAndBack(t, guard, reg.Front, rev2, ns, "cm", "two")
	badCredentials(t, guard, creds, "spec.oci", "password")

	// A corrupt artifact names itself; the last good revision stays, nothing is deleted.
	bad, err := reg.PushCorrupt(ctx, "deploy", "stable")
	if err != nil {
		t.Fatal(err)
	}
	g := waitCondition(t, guard, v1alpha1.ConditionStalled, metav1.ConditionTrue, v1alpha1.ReasonRenderFailed, reg.URL("deploy")+":stable@"+bad+": layer sha256:")
	if g.Status.LastAppliedRevision != rev2 || !strings.Contains(findCondition(g, v1alpha1.ConditionStalled).Message, "not a gzip archive") {
		t.Fatalf("after a corrupt artifact: revision %s, %+v", g.Status.LastAppliedRevision, g.Status.Conditions)
	}
	waitValue(t, ns, "cm", "two")
}

func TestHelmRepositorySource(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	const ns, guard = "helm-repo-source", "helm-repo-source"
	repo, err := sourceserver.StartChartRepo(filepath.Join(devenv.DefaultBinDir(), "helm"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(repo.Close)
	chart := func(v string) map[string]string {
		return map[string]string{
			"values.yaml":       "value: default\n",
			"templates/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm\ndata:\n  value: {{ .Values.value | quote }}\n  version: " + v + "\n",
		}
	}
	if err := repo.AddChart(ctx, "demo", "0.1.0", chart("0.1.0")); err != nil {
		t.Fatal(err)
	}
	repo.SetAuth("reader", "chart-pass")
	creds := secret(t, "helm-repo-source-creds", "charts", map[string][]byte{"username": []byte("reader"), "password": []byte("chart-pass")})
	newArtifactGuard(t, guard, v1alpha1.GuardSpec{
		// The repository speaks plain HTTP: its credentials go only with insecure.
		HelmRepository:  &v1alpha1.HelmRepositorySource{URL: repo.URL(), Chart: "demo", Version: ">=0.1.0 <1", SecretRef: creds, Insecure: true},
		Helm:            &v1alpha1.HelmSpec{Namespace: ns, Values: &apiextensionsv1.JSON{Raw: []byte(`{"value":"from-guard"}`)}},
		CreateNamespace: true,
	})

	rev1 := waitNewRevision(t, guard, "")
	if !strings.HasPrefix(rev1, "demo@0.1.0@sha256:") {
		t.Fatalf("revision %s", rev1)
	}
	waitValue(t, ns, "cm", "from-guard")

	if err := repo.AddChart(ctx, "demo", "0.2.0", chart("0.2.0")); err != nil {
		t.Fatal(err)
	}
	rev2 := waitNewRevision(t, guard, rev1)
	if !strings.HasPrefix(rev2, "demo@0.2.0@sha256:") {
		t.Fatalf("revision %s", rev2)
	}

	noDownloadWhileUnchanged(t, repo.Front, "GET /index.yaml")
	downAndBack(t, guard, repo.Front, rev2, ns, "cm", "from-guard")
	badCredentials(t, guard, creds, "spec.helmRepository", "password")

	// An archive that is not what index.yaml says is refused, naming it. The
	// guard must not see the good archive between its indexing and its
	// replacement (it did once under load, and applied 0.3.0).
	if err := repo.Atomically(func() error {
		if err := repo.AddChart(ctx, "demo", "0.3.0", chart("0.3.0")); err != nil {
			return err
		}
		return os.WriteFile(repo.Archive("demo", "0.3.0"), []byte("truncated"), 0o644)
	}); err != nil {
		t.Fatal(err)
	}
	g := waitCondition(t, guard, v1alpha1.ConditionReady, metav1.ConditionFalse, v1alpha1.ReasonFetchFailed, repo.URL()+"/demo-0.3.0.tgz: the archive has digest")
	if g.Status.LastAppliedRevision != rev2 {
		t.Fatalf("applied revision %s, want %s", g.Status.LastAppliedRevision, rev2)
	}
	waitValue(t, ns, "cm", "from-guard")
}

func TestHelmChartFromOCIRegistry(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	const ns, guard = "helm-oci-source", "helm-oci-source"
	repo, err := sourceserver.StartChartRepo(filepath.Join(devenv.DefaultBinDir(), "helm"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(repo.Close)
	reg, err := sourceserver.StartRegistry()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(reg.Close)
	if err := repo.AddChart(ctx, "demo", "1.0.0", map[string]string{"templates/cm.yaml": configMap(ns, "cm", "oci chart")}); err != nil {
		t.Fatal(err)
	}
	if _, err := repo.PushOCI(ctx, "demo", "1.0.0", reg.URL("charts")); err != nil {
		t.Fatal(err)
	}
	newArtifactGuard(t, guard, v1alpha1.GuardSpec{
		HelmRepository:  &v1alpha1.HelmRepositorySource{URL: reg.URL("charts"), Chart: "demo", Version: "1.0.0", Insecure: true},
		CreateNamespace: true,
	})
	if rev := waitNewRevision(t, guard, ""); !strings.HasPrefix(rev, "demo@1.0.0@sha256:") {
		t.Fatalf("revision %s", rev)
	}
	waitValue(t, ns, "cm", "oci chart")
	noDownloadWhileUnchanged(t, reg.Front, "HEAD /v2/charts/demo/manifests/1.0.0")
}

func TestBucketSource(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	const ns, guard = "bucket-source", "bucket-source"
	m, err := sourceserver.StartMinIO(filepath.Join(devenv.DefaultBinDir(), "minio"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(m.Close)
	if err := m.MakeBucket(ctx, "infra"); err != nil {
		t.Fatal(err)
	}
	for key, c := range map[string]string{"apps/ns.yaml": namespace(ns), "apps/cm.yaml": configMap(ns, "cm", "one"), "other/x.yaml": "not: applied\n"} {
		if err := m.Put(ctx, "infra", key, c); err != nil {
			t.Fatal(err)
		}
	}
	creds := secret(t, "bucket-source-creds", "s3", map[string][]byte{"accessKey": []byte(m.AccessKey), "secretKey": []byte(m.SecretKey)})
	newArtifactGuard(t, guard, v1alpha1.GuardSpec{Bucket: &v1alpha1.BucketSource{Endpoint: m.Endpoint(), Bucket: "infra", Prefix: "apps", Insecure: true, SecretRef: creds}})

	rev1 := waitNewRevision(t, guard, "")
	if !strings.HasPrefix(rev1, "sha256:") {
		t.Fatalf("revision %s", rev1)
	}
	waitValue(t, ns, "cm", "one")

	if err := m.Put(ctx, "infra", "apps/cm.yaml", configMap(ns, "cm", "two")); err != nil {
		t.Fatal(err)
	}
	rev2 := waitNewRevision(t, guard, rev1)
	waitValue(t, ns, "cm", "two")

	noDownloadWhileUnchanged(t, m.Front, "GET /infra/")
	downAndBack(t, guard, m.Front, rev2, ns, "cm", "two")
	badCredentials(t, guard, creds, "spec.bucket", "secretKey")

	// A manifest that does not parse names the object; nothing is deleted.
	if err := m.Put(ctx, "infra", "apps/broken.yaml", "kind: [\n"); err != nil {
		t.Fatal(err)
	}
	g := waitCondition(t, guard, v1alpha1.ConditionStalled, metav1.ConditionTrue, v1alpha1.ReasonRenderFailed, "apps/broken.yaml")
	if g.Status.LastAppliedRevision != rev2 {
		t.Fatalf("applied revision %s, want %s", g.Status.LastAppliedRevision, rev2)
	}
	waitValue(t, ns, "cm", "two")
}

// TestGuardNamesExactlyOneSource: the API server refuses a Guard with no
// source or with two, with a message that says so, and one in the flat Git
// form of before (spec.url, spec.ref), which spec.git replaced.
func TestGuardNamesExactlyOneSource(t *testing.T) {
	t.Parallel()
	tests := []struct{ name, spec, want string }{
		{"none", "interval: 1m", "a Guard names exactly one source"},
		{"two", "git:\n    url: https://git.example/a.git\n  oci:\n    url: oci://r.example/a", "a Guard names exactly one source"},
		{"flat git form", "url: https://git.example/a.git\n  ref: main", `unknown field "spec.url"`},
		{"ref and semver", "git:\n    url: https://git.example/a.git\n    ref: main\n    semver: ^1", "spec.git.ref and spec.git.semver exclude each other"},
		{"tag and digest", "oci:\n    url: oci://r.example/a\n    tag: v1\n    digest: sha256:" + strings.Repeat("a", 64), "spec.oci.tag, spec.oci.semver and spec.oci.digest exclude each other"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			file := filepath.Join(t.TempDir(), "guard.yaml")
			doc := "apiVersion: driftguard.io/v1alpha1\nkind: Guard\nmetadata:\n  name: invalid-source\nspec:\n  " + tt.spec + "\n"
			if err := os.WriteFile(file, []byte(doc), 0o644); err != nil {
				t.Fatal(err)
			}
			out, err := h.KubectlAs(t, h.Cluster.AdminKubeconfig, "apply", "--dry-run=server", "-f", file)
			if err == nil || !strings.Contains(out, tt.want) {
				t.Fatalf("kubectl apply: %v\n%s", err, out)
			}
		})
	}
}

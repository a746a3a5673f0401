package faults

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/driftguard/driftguard/api/v1alpha1"
	"github.com/driftguard/driftguard/apply"
	"github.com/driftguard/driftguard/audit"
	"github.com/driftguard/driftguard/gitserver"
	"github.com/driftguard/driftguard/test/harness"
	"github.com/driftguard/driftguard/test/wait"
)

// webhookName names the webhook configurations of every guard of this suite.
const webhookName = "driftguard-faults"

// guardProc is the guard of one test, across restarts.
type guardProc struct {
	t          *testing.T
	kubeconfig string
	dir        string
	args       []string
	auditFile  string
	procs      []*harness.Process
	recs       []*harness.Records // one per process: a killed one may leave half a line
}

// startGuard starts `driftguard run` for t with the suite's defaults (audit
// to stdout and to a file, Event sink off, 30 s default interval) and args,
// and waits until it is healthy. It is stopped when t ends.
func startGuard(t *testing.T, args ...string) *guardProc {
	t.Helper()
	return startGuardAs(t, guardKubeconfig, args...)
}

// startGuardAs is startGuard with another kubeconfig.
func startGuardAs(t *testing.T, kubeconfig string, args ...string) *guardProc {
	t.Helper()
	dir := guardDir(t)
	g := &guardProc{t: t, kubeconfig: kubeconfig, dir: dir, args: args, auditFile: filepath.Join(dir, "audit.log")}
	t.Cleanup(g.cleanup)
	g.start()
	return g
}

// start starts another process of the guard, with the same flags and folder.
func (g *guardProc) start() {
	g.t.Helper()
	rec := &harness.Records{}
	args := append([]string{"--audit-events=false", "--audit-file", g.auditFile, "--default-interval", "30s"}, g.args...)
	p, err := harness.StartProcess(harness.ProcessOptions{
		Kubeconfig: g.kubeconfig, Dir: g.dir, WebhookConfigName: webhookName, Args: args, Stdout: rec,
	})
	if err != nil {
		g.t.Fatal(err)
	}
	g.procs, g.recs = append(g.procs, p), append(g.recs, rec)
	if err := p.WaitHealthy(60 * time.Second); err != nil {
		g.t.Fatal(err)
	}
}

func (g *guardProc) proc() *harness.Process { return g.procs[len(g.procs)-1] }

// alive fails the test when the current process has exited.
func (g *guardProc) alive() {
	g.t.Helper()
	if done, err := g.proc().Exited(); done {
		g.t.Fatal(err)
	}
}

// records returns the audit records every process of the guard wrote to
// stdout, in order.
func (g *guardProc) records() []audit.Record {
	var out []audit.Record
	for _, r := range g.recs {
		out = append(out, r.All()...)
	}
	return out
}

// fileRecords reads the audit file sink: the records, and the lines that are
// not records.
func (g *guardProc) fileRecords() ([]audit.Record, []string) {
	g.t.Helper()
	f, err := os.Open(g.auditFile)
	if err != nil {
		g.t.Fatalf("audit file: %v", err)
	}
	defer f.Close()
	var recs []audit.Record
	var bad []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 1<<16), 1<<24)
	for sc.Scan() {
		var r audit.Record
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			bad = append(bad, sc.Text())
			continue
		}
		recs = append(recs, r)
	}
	if err := sc.Err(); err != nil {
		g.t.Fatal(err)
	}
	return recs, bad
}

func (g *guardProc) cleanup() {
	for _, p := range g.procs {
		_ = p.Stop()
	}
	ctx := context.Background()
	_ = kube.AdmissionregistrationV1().ValidatingWebhookConfigurations().Delete(ctx, webhookName, metav1.DeleteOptions{})
	_ = kube.AdmissionregistrationV1().MutatingWebhookConfigurations().Delete(ctx, webhookName, metav1.DeleteOptions{})
	if g.t.Failed() && len(g.procs) > 0 {
		g.t.Logf("guard log: %s", g.proc().LogPath)
		if b, err := os.ReadFile(g.proc().LogPath); err == nil {
			lines := strings.Split(strings.TrimSpace(string(b)), "\n")
			g.t.Logf("last lines of the guard's log:\n%s", strings.Join(lines[max(0, len(lines)-40):], "\n"))
		}
	}
}

// waitWebhook waits until the guard registered its validating webhook and
// the API server acts on it: alice's patch of ns/name is denied.
func (g *guardProc) waitWebhook(ns, name string) {
	g.t.Helper()
	wait.Eventually(g.t, 60*time.Second, "webhook denies alice", func() error {
		g.alive()
		err := patchValue(alice, ns, name, fmt.Sprintf("probe-%d", time.Now().UnixNano()))
		if isDenied(err) {
			return nil
		}
		return fmt.Errorf("probe patch: %v", err)
	})
}

func isDenied(err error) bool {
	return apierrors.IsForbidden(err) && strings.Contains(err.Error(), "driftguard")
}

// --- Git and Guards ---

const gitValue = "git"

func cmName(i int) string { return fmt.Sprintf("cm-%04d", i) }

func cmDoc(ns, name, value string) string {
	return fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: %s\n  namespace: %s\ndata:\n  value: %s\n", name, ns, value)
}

// cmFiles lays out n ConfigMaps of ns, perFile documents a file
// (cms/file-NN.yaml), each with data.value value(i).
func cmFiles(ns string, n, perFile int, value func(int) string) map[string]string {
	files := map[string]string{}
	for start := 0; start < n; start += perFile {
		var docs []string
		for i := start; i < min(start+perFile, n); i++ {
			docs = append(docs, cmDoc(ns, cmName(i), value(i)))
		}
		files[cmFile(start/perFile)] = strings.Join(docs, "---\n")
	}
	return files
}

func cmFile(n int) string { return fmt.Sprintf("cms/file-%02d.yaml", n) }

func gitValues(int) string { return gitValue }

// newRepo creates repository name holding files and pushes it.
func newRepo(t *testing.T, name string, files map[string]string) (*gitserver.Repo, string) {
	t.Helper()
	repo, err := git.NewRepo(name)
	if err != nil {
		t.Fatal(err)
	}
	return repo, commit(t, repo, "initial", files)
}

// commit writes and removes files, commits and pushes; it returns the SHA.
func commit(t *testing.T, repo *gitserver.Repo, msg string, write map[string]string, remove ...string) string {
	t.Helper()
	for p, c := range write {
		if err := repo.WriteFile(p, c); err != nil {
			t.Fatal(err)
		}
	}
	for _, p := range remove {
		if err := repo.Remove(p); err != nil {
			t.Fatal(err)
		}
	}
	sha, err := repo.CommitAndPush(msg)
	if err != nil {
		t.Fatal(err)
	}
	return sha
}

// namespace creates ns outside Git; its ConfigMaps are deleted when t ends.
func namespace(t *testing.T, ns string) {
	t.Helper()
	if _, err := kube.CoreV1().Namespaces().Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = kube.CoreV1().ConfigMaps(ns).DeleteCollection(context.Background(), metav1.DeleteOptions{}, metav1.ListOptions{LabelSelector: apply.GuardLabel})
	})
}

// createGuard creates a Guard of repository name (branch main); it is
// deleted when t ends.
func createGuard(t *testing.T, name string, mods ...func(*v1alpha1.GuardSpec)) {
	t.Helper()
	g := &v1alpha1.Guard{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec:       v1alpha1.GuardSpec{Git: &v1alpha1.GitSource{URL: git.URL(name), Ref: "main"}, Interval: metav1.Duration{Duration: 30 * time.Second}},
	}
	for _, m := range mods {
		m(&g.Spec)
	}
	if err := admin.Create(context.Background(), g); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = admin.Delete(context.Background(), g) })
}

func getGuard(name string) (*v1alpha1.Guard, error) {
	var g v1alpha1.Guard
	err := admin.Get(context.Background(), client.ObjectKey{Name: name}, &g)
	return &g, err
}

// waitApplied waits until Guard name is Ready with rev applied and n objects.
func waitApplied(t *testing.T, g *guardProc, name, rev string, n int, timeout time.Duration) {
	t.Helper()
	wait.Eventually(t, timeout, fmt.Sprintf("guard %s Ready with %s and %d objects", name, rev[:7], n), func() error {
		g.alive()
		got, err := getGuard(name)
		if err != nil {
			return err
		}
		if !meta.IsStatusConditionTrue(got.Status.Conditions, v1alpha1.ConditionReady) || got.Status.LastAppliedRevision != rev || int(got.Status.ManagedObjects) != n {
			return fmt.Errorf("revision %q, %d objects, conditions %+v", got.Status.LastAppliedRevision, got.Status.ManagedObjects, got.Status.Conditions)
		}
		return nil
	})
}

// configMapValues lists the guard-labelled ConfigMaps of ns: name → data.value.
func configMapValues(ns string) (map[string]string, error) {
	list, err := kube.CoreV1().ConfigMaps(ns).List(context.Background(), metav1.ListOptions{LabelSelector: apply.GuardLabel})
	if err != nil {
		return nil, err
	}
	out := make(map[string]string, len(list.Items))
	for _, cm := range list.Items {
		out[cm.Name] = cm.Data["value"]
	}
	return out, nil
}

// settledConfigMapValues is configMapValues once two lists half a second
// apart hold the same ConfigMaps (at most 10 s): requests a killed client
// sent may still be stored after it died.
func settledConfigMapValues(ns string) (map[string]string, error) {
	prev, err := configMapValues(ns)
	for deadline := time.Now().Add(10 * time.Second); err == nil && time.Now().Before(deadline); {
		time.Sleep(500 * time.Millisecond)
		var now map[string]string
		if now, err = configMapValues(ns); err == nil && maps.Equal(now, prev) {
			return now, nil
		}
		prev = now
	}
	return prev, err
}

// countConfigMaps counts the ConfigMaps of ns with one small list request.
func countConfigMaps(ns string) (int, error) {
	list, err := kube.CoreV1().ConfigMaps(ns).List(context.Background(), metav1.ListOptions{Limit: 1})
	if err != nil {
		return 0, err
	}
	n := len(list.Items)
	if list.RemainingItemCount != nil {
		n += int(*list.RemainingItemCount)
	}
	return n, nil
}

// sameAsGit compares the ConfigMaps of ns with want (name → value).
func sameAsGit(ns string, want map[string]string) error {
	got, err := configMapValues(ns)
	if err != nil {
		return err
	}
	var diffs []string
	for name, v := range want {
		if got[name] != v {
			diffs = append(diffs, fmt.Sprintf("%s=%q (Git %q)", name, got[name], v))
		}
	}
	for name := range got {
		if _, ok := want[name]; !ok {
			diffs = append(diffs, name+" is not in Git")
		}
	}
	if len(diffs) > 0 {
		sort.Strings(diffs)
		return fmt.Errorf("%d ConfigMaps differ from Git: %s", len(diffs), strings.Join(diffs[:min(5, len(diffs))], ", "))
	}
	return nil
}

func wantValues(n int, value func(int) string) map[string]string {
	out := make(map[string]string, n)
	for i := range n {
		out[cmName(i)] = value(i)
	}
	return out
}

// waitFor waits until at least n ConfigMaps exist in ns.
func waitFor(t *testing.T, g *guardProc, ns string, n int) {
	t.Helper()
	wait.Eventually(t, 60*time.Second, fmt.Sprintf("%d ConfigMaps in %s", n, ns), func() error {
		g.alive()
		got, err := countConfigMaps(ns)
		if err != nil || got < n {
			return fmt.Errorf("%d ConfigMaps: %v", got, err)
		}
		return nil
	})
}

// --- edits ---

func patchValue(k kubernetes.Interface, ns, name, value string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	_, err := k.CoreV1().ConfigMaps(ns).Patch(ctx, name, types.MergePatchType, fmt.Appendf(nil, `{"data":{"value":%q}}`, value), metav1.PatchOptions{FieldManager: "faults"})
	return err
}

// edit is one manual change of a flood.
type edit struct {
	obj   int
	token string
	rv    string
	err   error
}

// flood patches data.value of ns's ConfigMaps targets[i] to prefix-i as
// user, at rate edits/s (open loop, at most 32 in flight).
func flood(k kubernetes.Interface, ns, prefix string, targets []int, rate float64) []edit {
	edits := make([]edit, len(targets))
	jobs := make(chan int)
	var wg sync.WaitGroup
	for range 32 {
		wg.Go(func() {
			for i := range jobs {
				e := edit{obj: targets[i], token: fmt.Sprintf("%s-%04d", prefix, i)}
				ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
				cm, err := k.CoreV1().ConfigMaps(ns).Patch(ctx, cmName(e.obj), types.MergePatchType,
					fmt.Appendf(nil, `{"data":{"value":%q}}`, e.token), metav1.PatchOptions{FieldManager: "faults-flood"})
				cancel()
				if err != nil {
					e.err = err
				} else {
					e.rv = cm.ResourceVersion
				}
				edits[i] = e
			}
		})
	}
	start := time.Now()
	for i := range targets {
		if d := time.Until(start.Add(time.Duration(float64(i) / rate * float64(time.Second)))); d > 0 {
			time.Sleep(d)
		}
		jobs <- i
	}
	close(jobs)
	wg.Wait()
	return edits
}

// liveValues returns the string live values of a record's fields.
func liveValues(r audit.Record) []string {
	var out []string
	for _, f := range r.Fields {
		if v, ok := f.Live.(string); ok {
			out = append(out, v)
		}
	}
	return out
}

// byToken indexes records of type typ by the live values they name.
func byToken(recs []audit.Record, typ audit.Type) map[string][]audit.Record {
	out := map[string][]audit.Record{}
	for _, r := range recs {
		if r.Type != typ {
			continue
		}
		for _, v := range liveValues(r) {
			out[v] = append(out[v], r)
		}
	}
	return out
}

// applied returns the names of ConfigMaps with an apply record (created or
// configured) in recs.
func applied(recs []audit.Record, ns string) map[string]bool {
	out := map[string]bool{}
	for _, r := range recs {
		if r.Type == audit.Apply && r.Object.Kind == "ConfigMap" && r.Object.Namespace == ns && (r.Action == "created" || r.Action == "configured") {
			out[r.Object.Name] = true
		}
	}
	return out
}

// waitSameRecords waits until the file sink holds what stdout got: both
// take the same batches, but a running guard may write a record to one
// between the two reads. A process the test killed may have written its
// last batch to one sink and not the other: up to killed records made
// before the current process started may differ.
func waitSameRecords(t *testing.T, g *guardProc, killed int) {
	t.Helper()
	wait.Eventually(t, 10*time.Second, "file sink holds what stdout got", func() error {
		file, _ := g.fileRecords()
		return sameRecords(g.records(), file, g.proc().Started, killed)
	})
}

// sameRecords checks that the file sink holds the records stdout got, as a
// multiset of (type, object, action, time), but for at most killed records
// made before restarted (those of a killed process's last batch).
func sameRecords(stdout, file []audit.Record, restarted time.Time, killed int) error {
	type key struct {
		text string
		time time.Time
	}
	keyOf := func(r audit.Record) key {
		return key{fmt.Sprintf("%s %s %s %s", r.Type, r.Object.String(), r.Action, r.Time.Format(time.RFC3339Nano)), r.Time}
	}
	count := map[key]int{}
	for _, r := range stdout {
		count[keyOf(r)]++
	}
	for _, r := range file {
		count[keyOf(r)]--
	}
	var diffs []string
	for k, n := range count {
		if n == 0 {
			continue
		}
		if k.time.Before(restarted) && killed >= max(n, -n) {
			killed -= max(n, -n)
			continue
		}
		diffs = append(diffs, fmt.Sprintf("%s (%+d)", k.text, n))
	}
	if len(diffs) > 0 {
		sort.Strings(diffs)
		return fmt.Errorf("stdout and file sinks differ in %d records: %s", len(diffs), strings.Join(diffs[:min(5, len(diffs))], "; "))
	}
	return nil
}

package harness

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/driftguard/driftguard/api/v1alpha1"
	"github.com/driftguard/driftguard/gitserver"
	"github.com/driftguard/driftguard/test/wait"
)

// Repo is a Git repository a test owns, and the Guard that applies it.
type Repo struct {
	*gitserver.Repo
	Guard   string
	URL     string
	Initial string // SHA of the first commit
}

// NewGuard creates a repository holding files, commits and pushes them, and
// creates a Guard for it. The Guard is deleted when the test ends.
func (h *Harness) NewGuard(t testing.TB, name string, prune bool, files map[string]string, mods ...func(*v1alpha1.GuardSpec)) *Repo {
	t.Helper()
	return h.NewLabelledGuard(t, name, nil, prune, files, mods...)
}

// NewLabelledGuard is NewGuard for a Guard with labels (a shard, say).
func (h *Harness) NewLabelledGuard(t testing.TB, name string, labels map[string]string, prune bool, files map[string]string, mods ...func(*v1alpha1.GuardSpec)) *Repo {
	t.Helper()
	gr, err := h.Git.NewRepo(name)
	if err != nil {
		t.Fatal(err)
	}
	for p, c := range files {
		if err := gr.WriteFile(p, c); err != nil {
			t.Fatal(err)
		}
	}
	sha, err := gr.CommitAndPush("initial")
	if err != nil {
		t.Fatal(err)
	}
	g := &v1alpha1.Guard{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels},
		Spec:       v1alpha1.GuardSpec{Git: &v1alpha1.GitSource{URL: h.RepoURL(name), Ref: "main"}, Prune: prune, Interval: metav1.Duration{Duration: 2 * time.Second}},
	}
	for _, mod := range mods {
		mod(&g.Spec)
	}
	if err := h.Admin.Create(context.Background(), g); err != nil {
		t.Fatalf("create guard %s: %v", name, err)
	}
	t.Cleanup(func() { _ = h.Admin.Delete(context.Background(), g) })
	return &Repo{Repo: gr, Guard: name, URL: h.RepoURL(name), Initial: sha}
}

// Guard returns the current state of a Guard.
func (h *Harness) Guard(t testing.TB, name string) *v1alpha1.Guard {
	t.Helper()
	var g v1alpha1.Guard
	if err := h.Admin.Get(context.Background(), client.ObjectKey{Name: name}, &g); err != nil {
		t.Fatalf("get guard %s: %v", name, err)
	}
	return &g
}

// WaitApplied waits until the Guard is Ready with revision rev applied.
func (h *Harness) WaitApplied(t testing.TB, name, rev string) *v1alpha1.Guard {
	t.Helper()
	var g *v1alpha1.Guard
	wait.Eventually(t, 60*time.Second, fmt.Sprintf("guard %s applies %s", name, rev), func() error {
		g = h.Guard(t, name)
		ready := meta.FindStatusCondition(g.Status.Conditions, v1alpha1.ConditionReady)
		if ready == nil || ready.Status != metav1.ConditionTrue || g.Status.LastAppliedRevision != rev {
			return fmt.Errorf("status: revision %q, conditions %+v", g.Status.LastAppliedRevision, g.Status.Conditions)
		}
		return nil
	})
	return g
}

// Change writes and removes files, commits and pushes; it returns the new SHA.
func (r *Repo) Change(t testing.TB, msg string, write map[string]string, remove ...string) string {
	t.Helper()
	for p, c := range write {
		if err := r.WriteFile(p, c); err != nil {
			t.Fatal(err)
		}
	}
	for _, p := range remove {
		if err := r.Remove(p); err != nil {
			t.Fatal(err)
		}
	}
	sha, err := r.CommitAndPush(msg)
	if err != nil {
		t.Fatal(err)
	}
	return sha
}

// RepoURL is the URL the guard fetches a repository from: the Git server
// behind a front that counts requests.
func (h *Harness) RepoURL(name string) string {
	u := h.Git.URL(name)
	rest := u[strings.Index(u, "://")+3:]
	return "http://" + h.gitFront + rest[strings.Index(rest, "/"):]
}

// refsRequests counts the requests for a repository's references: one per
// full reconcile of a Guard of it (each starts by asking for them).
func (h *Harness) refsRequests(repo string) int {
	n := 0
	for k, v := range h.GitCalls() {
		if strings.Contains(k, "/"+repo+".git/info/refs") {
			n += v
		}
	}
	return n
}

// WaitReconciles waits until n more full reconciles of the Guard of repo
// have started. A Guard is never reconciled twice at once, so when it
// returns, n-1 of them have finished, status writes included.
func (h *Harness) WaitReconciles(t testing.TB, repo string, n int) {
	t.Helper()
	start := h.refsRequests(repo)
	wait.Eventually(t, 60*time.Second, fmt.Sprintf("%d more reconciles of %s", n, repo), func() error {
		if got := h.refsRequests(repo) - start; got < n {
			return fmt.Errorf("%d so far", got)
		}
		return nil
	})
}

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/driftguard/driftguard/api/v1alpha1"
	"github.com/driftguard/driftguard/test/wait"
)

// statusSecret is a second notification Secret (--notify-secret takes
// several): the GitHub provider, its API on loopback.
const statusSecret = "driftguard-commit-status"

const statusToken = "e2e-status-token"

var statuses *statusAPI

// statusAPI serves GitHub's "create a commit status" route on loopback and
// keeps each status it takes as "owner/repo sha state context".
type statusAPI struct {
	mu  sync.Mutex
	got []string
	mux *http.ServeMux
}

func newStatusAPI() *statusAPI {
	s := &statusAPI{mux: http.NewServeMux()}
	s.mux.HandleFunc("POST /api/v3/repos/{owner}/{repo}/statuses/{sha}", func(w http.ResponseWriter, r *http.Request) {
		var body struct {
			State       string `json:"state"`
			Context     string `json:"context"`
			Description string `json:"description"`
		}
		if r.Header.Get("Authorization") != "Bearer "+statusToken {
			http.Error(w, "Bad credentials", http.StatusUnauthorized)
			return
		}
		if err := json.NewDecoder(r.Body).Decode(&body); err != nil || (body.State != "success" && body.State != "failure") || body.Context == "" {
			http.Error(w, "Validation Failed", http.StatusUnprocessableEntity)
			return
		}
		s.mu.Lock()
		s.got = append(s.got, fmt.Sprintf("%s/%s %s %s %s", r.PathValue("owner"), r.PathValue("repo"), r.PathValue("sha"), body.State, body.Context))
		s.mu.Unlock()
		w.WriteHeader(http.StatusCreated)
	})
	return s
}

func (s *statusAPI) ServeHTTP(w http.ResponseWriter, r *http.Request) { s.mux.ServeHTTP(w, r) }

func (s *statusAPI) count(line string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, g := range s.got {
		if g == line {
			n++
		}
	}
	return n
}

// createStatusSecret configures the GitHub provider against the loopback API.
func createStatusSecret(apiURL string) error {
	return h.Admin.Create(context.Background(), &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "driftguard-system", Name: statusSecret},
		StringData: map[string]string{"provider": "github", "token": statusToken, "apiURL": apiURL + "/api/v3"}})
}

// TestCommitStatuses: each revision a Guard applies gets one success
// status, a revision that does not render one failure status, and a
// routine sync notifies nobody.
func TestCommitStatuses(t *testing.T) {
	t.Parallel()
	const name, ns = "commit-status", "commit-status"
	gr, err := h.Git.NewRepo("org/" + name)
	if err != nil {
		t.Fatal(err)
	}
	commit := func(msg string, files map[string]string) string {
		t.Helper()
		for p, c := range files {
			if err := gr.WriteFile(p, c); err != nil {
				t.Fatal(err)
			}
		}
		sha, err := gr.CommitAndPush(msg)
		if err != nil {
			t.Fatal(err)
		}
		return sha
	}
	first := commit("initial", map[string]string{"ns.yaml": namespace(ns), "cm.yaml": configMap(ns, "cm", "git")})
	g := &v1alpha1.Guard{ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: v1alpha1.GuardSpec{Git: &v1alpha1.GitSource{URL: h.RepoURL("org/" + name), Ref: "main"}, Interval: metav1.Duration{Duration: 2 * time.Second}}}
	if err := h.Admin.Create(context.Background(), g); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = h.Admin.Delete(context.Background(), g) })
	h.WaitApplied(t, name, first)
	ctx := "driftguard/" + name
	want := func(sha, state string) {
		t.Helper()
		line := fmt.Sprintf("org/%s %s %s %s", name, sha, state, ctx)
		wait.Eventually(t, 30*time.Second, line, func() error {
			if n := statuses.count(line); n != 1 {
				statuses.mu.Lock()
				defer statuses.mu.Unlock()
				return fmt.Errorf("%d such statuses; all: %q", n, statuses.got)
			}
			return nil
		})
	}
	want(first, "success")

	broken := commit("break it", map[string]string{"cm.yaml": "kind: ConfigMap\nmetadata: [\n"})
	want(broken, "failure")
	fixed := commit("fix it", map[string]string{"cm.yaml": configMap(ns, "cm", "fixed")})
	h.WaitApplied(t, name, fixed)
	want(fixed, "success")

	// Two more full reconciles (every 2 s) since: still one status per
	// revision and result.
	h.WaitReconciles(t, "org/"+name, 3)
	for _, l := range []string{first + " success", broken + " failure", fixed + " success"} {
		if n := statuses.count(fmt.Sprintf("org/%s %s %s", name, l, ctx)); n != 1 {
			t.Errorf("%d statuses %s, want 1", n, l)
		}
	}
	// The generic receiver heard of the failed sync only.
	notifications.mu.Lock()
	defer notifications.mu.Unlock()
	for _, n := range notifications.got {
		if n.Guard == name && n.Kind != "sync-failed" {
			t.Errorf("notification %+v: a routine sync or apply notified", n)
		}
	}
	if !strings.Contains(h.RepoURL("org/"+name), "127.0.0.1") {
		t.Fatalf("the test's Git URL %s is not on the API's host", h.RepoURL("org/"+name))
	}
}

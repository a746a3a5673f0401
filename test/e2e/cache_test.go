package e2e

import (
	"context"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/driftguard/driftguard/api/v1alpha1"
	"github.com/driftguard/driftguard/source"
)

// TestPrivateRepositoryNotShared: Guard A fetches a private repository with
// its credentials. Guard B, with the same URL and no credentials, pins A's
// commit: it must be refused by the Git server, not handed A's snapshot or
// commit from the guard's caches. Guard C names A's cached repository on
// the guard's disk (file:// and a path): refused, naming the field and
// --allow-local-sources.
func TestPrivateRepositoryNotShared(t *testing.T) {
	t.Parallel()
	const ns = "cache-private"
	front := httptest.NewTLSServer(h.Git.Handler()) // httptest's certificate: trusted (startGitTLS)
	t.Cleanup(front.Close)
	url := front.URL + "/cache-private.git"
	creds := secret(t, ns+"-creds", "git", map[string][]byte{"username": []byte("deploy"), "password": []byte("s3cret")})
	h.Git.Private("cache-private", "deploy", "s3cret")
	a := h.NewGuard(t, "cache-private", true, map[string]string{"ns.yaml": namespace(ns), "cm.yaml": configMap(ns, "cm", "private")},
		func(s *v1alpha1.GuardSpec) { s.Git.URL, s.Git.SecretRef = url, creds })
	h.WaitApplied(t, a.Guard, a.Initial)

	guard := func(name, u, ref string) {
		g := &v1alpha1.Guard{ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: v1alpha1.GuardSpec{Git: &v1alpha1.GitSource{URL: u, Ref: ref}, Interval: metav1.Duration{Duration: 2 * time.Second}}}
		if err := h.Admin.Create(context.Background(), g); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = h.Admin.Delete(context.Background(), g) })
	}
	guard("cache-pinned", url, a.Initial)
	b := waitCondition(t, "cache-pinned", v1alpha1.ConditionReady, metav1.ConditionFalse, v1alpha1.ReasonFetchFailed, "authentication required")
	if b.Status.LastAppliedRevision != "" || b.Status.ManagedObjects != 0 {
		t.Fatalf("guard without credentials applied %q (%d objects)", b.Status.LastAppliedRevision, b.Status.ManagedObjects)
	}

	cached := filepath.Join(h.Dir, "gitcache", source.Request{URL: url, Auth: &source.Auth{Username: "deploy", Password: "s3cret"}}.CacheKey()[:32]+".git")
	if _, err := os.Stat(cached); err != nil {
		t.Fatalf("A's repository is not where the test looks: %v", err)
	}
	guard("cache-file", "file://"+cached, "main")
	waitCondition(t, "cache-file", v1alpha1.ConditionReady, metav1.ConditionFalse, v1alpha1.ReasonFetchFailed, "spec.git.url \"file://"+cached+"\" is on the guard's own disk")
	guard("cache-path", cached, "main")
	waitCondition(t, "cache-path", v1alpha1.ConditionReady, metav1.ConditionFalse, v1alpha1.ReasonFetchFailed, "start driftguard run with --allow-local-sources")
	waitValue(t, ns, "cm", "private")
}

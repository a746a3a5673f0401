package e2e

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"

	"github.com/driftguard/driftguard/api/v1alpha1"
	"github.com/driftguard/driftguard/gitserver"
)

// secret creates a Secret in a namespace of its own and returns its reference.
func secret(t *testing.T, ns, name string, data map[string][]byte) *v1alpha1.SecretReference {
	t.Helper()
	ctx := context.Background()
	if err := h.Admin.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		t.Fatal(err)
	}
	if err := h.Admin.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Data: data}); err != nil {
		t.Fatal(err)
	}
	return &v1alpha1.SecretReference{Namespace: ns, Name: name}
}

// TestSemverFollowsTheHighestTagInRange: spec.semver picks the highest tag
// in the range, and moves on when a higher one is pushed.
func TestSemverFollowsTheHighestTagInRange(t *testing.T) {
	t.Parallel()
	const ns = "semver"
	repo := h.NewGuard(t, "semver", true, map[string]string{"ns.yaml": namespace(ns), "cm.yaml": configMap(ns, "cm", "untagged")},
		func(s *v1alpha1.GuardSpec) { s.Git.Ref, s.Git.SemVer = "", ">=1.0.0 <2" })
	tag := func(version string) string {
		sha := repo.Change(t, version, map[string]string{"cm.yaml": configMap(ns, "cm", version)})
		if err := repo.Tag(version); err != nil {
			t.Fatal(err)
		}
		return sha
	}
	tag("v1.0.0")
	v12 := tag("v1.2.0")
	tag("v2.0.0")
	h.WaitApplied(t, repo.Guard, v12)
	waitValue(t, ns, "cm", "v1.2.0")
	v13 := tag("v1.3.0")
	h.WaitApplied(t, repo.Guard, v13)
	waitValue(t, ns, "cm", "v1.3.0")
}

// TestSSHSourceWithKnownHosts: a Guard fetches over SSH with the key and
// known_hosts of its Secret; a wrong host key is refused and says so.
func TestSSHSourceWithKnownHosts(t *testing.T) {
	t.Parallel()
	const ns = "ssh-source"
	key, err := gitserver.NewSSHKey("")
	if err != nil {
		t.Fatal(err)
	}
	srv, err := h.Git.StartSSH(key.PublicKey)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	other, err := h.Git.StartSSH()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { other.Close() })

	good := secret(t, "ssh-creds", "git", map[string][]byte{"identity": key.PrivateKeyPEM, "known_hosts": []byte(srv.KnownHostsLine())})
	repo := h.NewGuard(t, "ssh-source", true, map[string]string{"ns.yaml": namespace(ns), "cm.yaml": configMap(ns, "cm", "over ssh")},
		func(s *v1alpha1.GuardSpec) { s.Git.SecretRef = good })
	// NewGuard points the Guard at the HTTP URL; move it to SSH.
	updateGuard(t, repo.Guard, func(s *v1alpha1.GuardSpec) { s.Git.URL = srv.URL("ssh-source") })
	applied := h.WaitApplied(t, repo.Guard, repo.Initial)
	if !strings.HasPrefix(applied.Spec.Git.URL, "ssh://") {
		t.Fatalf("url %s", applied.Spec.Git.URL)
	}
	waitValue(t, ns, "cm", "over ssh")

	// The same key, but known_hosts of another server: the host key does not match.
	wrong := secret(t, "ssh-wrong", "git", map[string][]byte{"identity": key.PrivateKeyPEM, "known_hosts": []byte(strings.Replace(other.KnownHostsLine(), hostPort(other.Addr()), hostPort(srv.Addr()), 1))})
	bad := h.NewGuard(t, "ssh-wrong-host", false, map[string]string{"cm.yaml": configMap(ns, "other", "x")},
		func(s *v1alpha1.GuardSpec) { s.Git.SecretRef = wrong })
	updateGuard(t, bad.Guard, func(s *v1alpha1.GuardSpec) { s.Git.URL = srv.URL("ssh-wrong-host") })
	waitCondition(t, bad.Guard, v1alpha1.ConditionReady, metav1.ConditionFalse, v1alpha1.ReasonFetchFailed, "host key")
}

// updateGuard changes a Guard's spec, retrying on conflicts with the
// guard's status writes.
func updateGuard(t *testing.T, name string, change func(*v1alpha1.GuardSpec)) {
	t.Helper()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		g := h.Guard(t, name)
		change(&g.Spec)
		return h.Admin.Update(context.Background(), g)
	})
	if err != nil {
		t.Fatalf("update guard %s: %v", name, err)
	}
}

// hostPort is the known_hosts form of an address: [host]:port.
func hostPort(addr string) string {
	host, port, _ := net.SplitHostPort(addr)
	return fmt.Sprintf("[%s]:%s", host, port)
}

// TestHTTPSBasicAuth: credentials come from the Secret and go only over
// HTTPS. Over plain http:// they are refused before anything is sent, with
// a condition naming the Guard and the Secret; wrong ones give a condition
// naming the Secret.
func TestHTTPSBasicAuth(t *testing.T) {
	t.Parallel()
	const ns = "basic-auth"
	git := h.Git.Handler()
	var authorized http.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if u, p, ok := r.BasicAuth(); !ok || u != "deploy" || p != "s3cret" {
			w.Header().Set("WWW-Authenticate", `Basic realm="git"`)
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		git.ServeHTTP(w, r)
	})
	gitTLSHandler.Store(&authorized)
	// The same repository over plain HTTP, which must never be asked.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var plainRequests atomic.Int32
	plain := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		plainRequests.Add(1)
		authorized.ServeHTTP(w, r)
	})}
	go plain.Serve(ln)
	t.Cleanup(func() { plain.Close() })

	good := secret(t, "basic-creds", "git", map[string][]byte{"username": []byte("deploy"), "password": []byte("s3cret")})
	repo := h.NewGuard(t, "basic-auth", true, map[string]string{"ns.yaml": namespace(ns), "cm.yaml": configMap(ns, "cm", "authorized")},
		func(s *v1alpha1.GuardSpec) {
			s.Git.URL = "http://" + ln.Addr().String() + "/basic-auth.git"
			s.Git.SecretRef = good
		})
	g := waitCondition(t, repo.Guard, v1alpha1.ConditionReady, metav1.ConditionFalse, v1alpha1.ReasonAuthFailed,
		"guard basic-auth: spec.git.secretRef basic-creds/git: the username and password (basic auth) would go in clear text to http://"+ln.Addr().String()+": use an https:// URL")
	if msg := findCondition(g, v1alpha1.ConditionReady).Message; strings.Contains(msg, "s3cret") {
		t.Fatalf("the condition shows the password: %s", msg)
	}

	updateGuard(t, repo.Guard, func(s *v1alpha1.GuardSpec) { s.Git.URL = gitTLS.URL + "/basic-auth.git" })
	h.WaitApplied(t, repo.Guard, repo.Initial)
	waitValue(t, ns, "cm", "authorized")

	wrong := secret(t, "basic-wrong", "git", map[string][]byte{"username": []byte("deploy"), "password": []byte("guess")})
	updateGuard(t, repo.Guard, func(s *v1alpha1.GuardSpec) { s.Git.SecretRef = wrong })
	waitCondition(t, repo.Guard, v1alpha1.ConditionReady, metav1.ConditionFalse, v1alpha1.ReasonFetchFailed, "basic-wrong/git")
	missing := &v1alpha1.SecretReference{Namespace: "basic-wrong", Name: "absent"}
	updateGuard(t, repo.Guard, func(s *v1alpha1.GuardSpec) { s.Git.SecretRef = missing })
	waitCondition(t, repo.Guard, v1alpha1.ConditionReady, metav1.ConditionFalse, v1alpha1.ReasonAuthFailed, "basic-wrong/absent")
	if n := plainRequests.Load(); n != 0 {
		t.Fatalf("the plain HTTP server was asked %d times", n)
	}
}

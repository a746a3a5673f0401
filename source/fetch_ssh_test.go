package source

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/go-logr/logr"
	"golang.org/x/crypto/ssh"

	"github.com/driftguard/driftguard/gitserver"
)

func startSSH(t *testing.T, gs *countingServer, keys ...*gitserver.SSHKey) *gitserver.SSHServer {
	t.Helper()
	ss, err := gs.StartSSH()
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range keys {
		ss.Authorize(k.PublicKey)
	}
	t.Cleanup(func() {
		if err := ss.Close(); err != nil {
			t.Errorf("close ssh server: %v", err)
		}
	})
	return ss
}

func TestFetchSSH(t *testing.T) {
	gs := newGitServer(t)
	key := newKey(t, "")
	encrypted := newKey(t, "open sesame")
	stranger := newKey(t, "")
	ss := startSSH(t, gs, key, encrypted)
	impostor := startSSH(t, gs, key) // another host key

	repo, err := gs.NewRepo("shop")
	if err != nil {
		t.Fatal(err)
	}
	sha := mustPush(t, repo, map[string]string{"apps/cm.yaml": configMap("web")}, "first")
	if err := repo.Tag("v1.0.0"); err != nil {
		t.Fatal(err)
	}

	knownHosts := []byte("# ssh-keyscan\n" + ss.KnownHostsLine() + "\n")
	// The impostor's key listed for our server's address: a mismatch.
	wrongKey := []byte(strings.Replace(impostor.KnownHostsLine(), fmt.Sprintf("]:%d ", impostor.Port()), fmt.Sprintf("]:%d ", ss.Port()), 1) + "\n")
	// Only some other host: our server is unknown.
	otherHost := []byte(impostor.KnownHostsLine() + "\n")
	auth := func(k *gitserver.SSHKey, kh []byte) *Auth { return &Auth{SSHKey: k.PrivateKeyPEM, KnownHosts: kh} }

	scpLike := fmt.Sprintf("git@127.0.0.1:%d:shop.git", ss.Port()) // go-git's scp-like form with a port

	t.Run("works", func(t *testing.T) {
		secret, err := AuthFromSecret(map[string][]byte{"identity": encrypted.PrivateKeyPEM, "password": []byte("open sesame"), "known_hosts": knownHosts})
		if err != nil {
			t.Fatal(err)
		}
		for _, tt := range []struct {
			name string
			req  Request
		}{
			{"ssh URL", Request{URL: ss.URL("shop"), Ref: "main", Auth: auth(key, knownHosts)}},
			{"scp-like URL", Request{URL: scpLike, Auth: auth(key, knownHosts)}},
			{"encrypted key from a Secret", Request{URL: ss.URL("shop"), SemVer: "^1", Auth: secret}},
		} {
			t.Run(tt.name, func(t *testing.T) {
				f := NewGitFetcher(t.TempDir(), logr.Discard())
				for range 2 { // the second time the revision is unchanged
					rev, snap, err := f.Fetch(t.Context(), tt.req)
					if err != nil {
						t.Fatalf("fetch: %v", err)
					}
					if rev != sha || names(snap)[0] != "web" || snap.URL != tt.req.URL {
						t.Fatalf("fetch = %s %v", rev, names(snap))
					}
				}
			})
		}
	})

	// The same repository over HTTP gives the same revision.
	if rev, _, err := NewGitFetcher(t.TempDir(), logr.Discard()).Fetch(t.Context(), Request{URL: gs.url("shop")}); err != nil || rev != sha {
		t.Fatalf("HTTP fetch = %s %v", rev, err)
	}

	tests := []struct {
		name    string
		req     Request
		want    string
		hostKey bool
		nKnown  int
	}{
		{"unauthorized key", Request{URL: ss.URL("shop"), Auth: auth(stranger, knownHosts)}, `ssh authentication as "git" with key ` + fingerprint(stranger) + ` failed`, false, 0},
		{"wrong host key", Request{URL: ss.URL("shop"), Auth: auth(key, wrongKey)}, fmt.Sprintf("ssh host key mismatch for 127.0.0.1:%d: it offered ssh-ed25519 %s, known_hosts has ssh-ed25519 %s", ss.Port(), fingerprintOf(ss), fingerprintOf(impostor)), true, 1},
		{"host not in known_hosts", Request{URL: ss.URL("shop"), Auth: auth(key, otherHost)}, fmt.Sprintf("ssh host 127.0.0.1:%d is not in known_hosts", ss.Port()), true, 0},
		{"missing known_hosts", Request{URL: ss.URL("shop"), Auth: &Auth{SSHKey: key.PrivateKeyPEM}}, "auth: an SSH URL needs known_hosts", false, 0},
		{"no credentials", Request{URL: scpLike}, "auth: an SSH URL needs credentials", false, 0},
		{"HTTP credentials", Request{URL: ss.URL("shop"), Auth: &Auth{BearerToken: "t"}}, "auth: an SSH URL cannot use username/password or bearerToken", false, 0},
		{"SSH key on HTTP", Request{URL: gs.url("shop"), Auth: auth(key, knownHosts)}, "auth: an http URL cannot use an SSH identity", false, 0},
		{"missing repository", Request{URL: ss.URL("nope"), Auth: auth(key, knownHosts)}, `repository "/nope.git" not found`, false, 0},
	}
	f := NewGitFetcher(t.TempDir(), logr.Discard())
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, snap, err := f.Fetch(t.Context(), tt.req)
			var fe *FetchError
			if !errors.As(err, &fe) || snap != nil {
				t.Fatalf("err = %v (%T), want a FetchError", err, err)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v\nwant containing %q", err, tt.want)
			}
			t.Log(err)
			var he *HostKeyError
			if errors.As(err, &he) != tt.hostKey || (tt.hostKey && len(he.Known) != tt.nKnown) {
				t.Fatalf("HostKeyError = %+v, want one: %v", he, tt.hostKey)
			}
		})
	}
}

func fingerprint(k *gitserver.SSHKey) string { return ssh.FingerprintSHA256(k.PublicKey) }

func fingerprintOf(ss *gitserver.SSHServer) string { return ssh.FingerprintSHA256(ss.HostKey()) }

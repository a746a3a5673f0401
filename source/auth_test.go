package source

import (
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"net"
	"reflect"
	"strings"
	"testing"

	githttp "github.com/go-git/go-git/v5/plumbing/transport/http"
	gitssh "github.com/go-git/go-git/v5/plumbing/transport/ssh"
	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/knownhosts"

	"github.com/driftguard/driftguard/gitserver"
)

func newKey(t *testing.T, passphrase string) *gitserver.SSHKey {
	t.Helper()
	k, err := gitserver.NewSSHKey(passphrase)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func TestAuthFromSecret(t *testing.T) {
	plain := newKey(t, "")
	encrypted := newKey(t, "open sesame")
	rsaKey, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	rsaPEM := pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(rsaKey)})
	kh := []byte("# scanned\n" + knownhosts.Line([]string{"git.example"}, plain.PublicKey) + "\n")

	tests := []struct {
		name string
		data map[string][]byte
		want *Auth
		err  string
	}{
		{"basic", map[string][]byte{"username": []byte("bot"), "password": []byte("pw")}, &Auth{Username: "bot", Password: "pw"}, ""},
		{"bearer token", map[string][]byte{"bearerToken": []byte("tok")}, &Auth{BearerToken: "tok"}, ""},
		{"ssh", map[string][]byte{"identity": plain.PrivateKeyPEM, "identity.pub": []byte(plain.AuthorizedKey()), "known_hosts": kh},
			&Auth{SSHKey: plain.PrivateKeyPEM, KnownHosts: kh}, ""},
		{"ssh rsa pkcs1 with user", map[string][]byte{"identity": rsaPEM, "known_hosts": kh, "username": []byte("deploy")},
			&Auth{SSHKey: rsaPEM, KnownHosts: kh, SSHUser: "deploy"}, ""},
		{"ssh encrypted key", map[string][]byte{"identity": encrypted.PrivateKeyPEM, "password": []byte("open sesame"), "known_hosts": kh},
			&Auth{SSHKey: encrypted.PrivateKeyPEM, SSHKeyPassphrase: "open sesame", KnownHosts: kh}, ""},
		{"empty", map[string][]byte{"ca.crt": []byte("x")}, nil, `secret has none of the keys "username", "password", "bearerToken" or "identity"`},
		{"not a key", map[string][]byte{"identity": []byte("hunter2"), "known_hosts": kh}, nil, `secret key "identity": ssh: no key found`},
		{"empty key", map[string][]byte{"identity": nil, "known_hosts": kh}, nil, `secret key "identity": the private key is empty`},
		{"encrypted without passphrase", map[string][]byte{"identity": encrypted.PrivateKeyPEM, "known_hosts": kh}, nil, `secret key "identity": the private key is encrypted and no passphrase (secret key "password") is given`},
		{"wrong passphrase", map[string][]byte{"identity": encrypted.PrivateKeyPEM, "password": []byte("hunter2"), "known_hosts": kh}, nil, `secret key "password": the passphrase does not decrypt the private key`},
		{"missing known_hosts", map[string][]byte{"identity": plain.PrivateKeyPEM}, nil, `secret key "known_hosts" is missing`},
		{"empty known_hosts", map[string][]byte{"identity": plain.PrivateKeyPEM, "known_hosts": []byte("# nothing\n\n")}, nil, `secret key "known_hosts": no host keys`},
		{"bad known_hosts line", map[string][]byte{"identity": plain.PrivateKeyPEM, "known_hosts": append(append([]byte{}, kh...), "git.example ssh-ed25519 hunter2\n"...)}, nil, `secret key "known_hosts": line 3: `},
		{"known_hosts without identity", map[string][]byte{"known_hosts": kh, "password": []byte("hunter2")}, nil, `secret key "known_hosts" is set but "identity" is missing`},
		{"identity and bearer token", map[string][]byte{"identity": plain.PrivateKeyPEM, "known_hosts": kh, "bearerToken": []byte("hunter2")}, nil, `secret keys "identity" and "bearerToken" do not go together`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := AuthFromSecret(tt.data)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("err = %v, want containing %q", err, tt.err)
				}
				if strings.Contains(err.Error(), "hunter2") {
					t.Fatalf("error shows a secret value: %v", err)
				}
				return
			}
			if err != nil {
				t.Fatalf("AuthFromSecret: %v", err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("got %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestAuthMethod(t *testing.T) {
	key := newKey(t, "")
	kh := []byte(knownhosts.Line([]string{"git.example"}, key.PublicKey) + "\n")
	sshAuth := &Auth{SSHKey: key.PrivateKeyPEM, KnownHosts: kh}
	basic := &Auth{Username: "u", Password: "p"}

	tests := []struct {
		name string
		url  string
		auth *Auth
		want string // the method's type, or the error
		user string // for SSH
	}{
		{"https anonymous", "https://git.example/org/infra.git", nil, "<nil>", ""},
		{"https basic", "https://git.example/org/infra.git", basic, "*http.BasicAuth", ""},
		{"https token wins", "https://git.example/org/infra.git", &Auth{Username: "u", BearerToken: "t"}, "*http.TokenAuth", ""},
		{"https with ssh key", "https://git.example/org/infra.git", sshAuth, "error: an https URL cannot use an SSH identity", ""},
		{"ssh URL", "ssh://git.example/org/infra.git", sshAuth, "*ssh.PublicKeys", "git"},
		{"ssh URL with user", "ssh://deploy@git.example:22/org/infra.git", sshAuth, "*ssh.PublicKeys", "deploy"},
		{"ssh user override", "ssh://deploy@git.example/org/infra.git", &Auth{SSHKey: key.PrivateKeyPEM, KnownHosts: kh, SSHUser: "bot"}, "*ssh.PublicKeys", "bot"},
		{"scp-like", "git@git.example:org/infra.git", sshAuth, "*ssh.PublicKeys", "git"},
		{"ssh with basic auth", "git@git.example:org/infra.git", basic, "error: an SSH URL cannot use username/password or bearerToken", ""},
		{"ssh anonymous", "ssh://git.example/org/infra.git", nil, "error: an SSH URL needs credentials", ""},
		{"ssh without known_hosts", "ssh://git.example/org/infra.git", &Auth{SSHKey: key.PrivateKeyPEM}, "error: an SSH URL needs known_hosts", ""},
		{"ssh bad known_hosts", "ssh://git.example/org/infra.git", &Auth{SSHKey: key.PrivateKeyPEM, KnownHosts: []byte("x y z\n")}, "error: known_hosts: line 1:", ""},
		{"ssh bad key", "ssh://git.example/org/infra.git", &Auth{SSHKey: []byte("nope"), KnownHosts: kh}, "error: ssh identity: ssh: no key found", ""},
		{"http anonymous", "http://git.example/org/infra.git", nil, "<nil>", ""},
		{"http basic", "http://git.example/org/infra.git", basic, "error: the username and password (basic auth) would go in clear text to http://git.example: use an https:// URL", ""},
		{"http basic, loopback", "http://127.0.0.1:8080/infra.git", basic, "error: the username and password (basic auth) would go in clear text to http://127.0.0.1:8080", ""},
		{"http password only", "http://git.example/org/infra.git", &Auth{Password: "p"}, "error: the username and password (basic auth) would go in clear text", ""},
		{"http token", "http://git.example/org/infra.git", &Auth{BearerToken: "t"}, "error: the bearerToken would go in clear text to http://git.example", ""},
		{"http URL with user and password", "http://u:p@git.example/org/infra.git", nil, "error: the URL's user information would go in clear text", ""},
		{"http URL with a token as user", "http://ghp_t@git.example/org/infra.git", nil, "error: the URL's user information would go in clear text", ""},
		{"https URL with user information", "https://u:p@git.example/org/infra.git", nil, "<nil>", ""},
		{"file anonymous", "file:///srv/git/infra.git", nil, "<nil>", ""},
		{"file with credentials", "file:///srv/git/infra.git", basic, "error: a file URL takes no credentials", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, err := tt.auth.method(tt.url, t.TempDir())
			got := reflect.TypeOf(m)
			desc := "<nil>"
			if got != nil {
				desc = got.String()
			}
			if err != nil {
				desc = "error: " + err.Error()
			}
			if !strings.HasPrefix(desc, tt.want) {
				t.Fatalf("method = %s, want %s", desc, tt.want)
			}
			if pk, ok := m.(*gitssh.PublicKeys); ok {
				if pk.User != tt.user {
					t.Fatalf("ssh user = %q, want %q", pk.User, tt.user)
				}
				if pk.HostKeyCallback == nil || !reflect.DeepEqual(pk.HostKeyAlgorithms, []string{ssh.KeyAlgoED25519}) {
					t.Fatalf("host key check %v, algorithms %v", pk.HostKeyCallback != nil, pk.HostKeyAlgorithms)
				}
			}
			if ba, ok := m.(*githttp.BasicAuth); ok && (ba.Username != "u" || ba.Password != "p") {
				t.Fatalf("basic auth = %+v", ba)
			}
		})
	}
}

func TestHostKeyCheck(t *testing.T) {
	known := newKey(t, "")
	other := newKey(t, "")
	rsaKey, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	rsaPub, err := ssh.NewPublicKey(&rsaKey.PublicKey)
	if err != nil {
		t.Fatal(err)
	}
	content := []byte(strings.Join([]string{
		knownhosts.Line([]string{"git.example"}, known.PublicKey),
		knownhosts.Line([]string{"git.example"}, rsaPub),
		knownhosts.Line([]string{"[git.example]:2222"}, other.PublicKey),
		"@revoked * " + strings.TrimSpace(string(ssh.MarshalAuthorizedKey(revokedKey(t)))),
	}, "\n"))

	check, algos, err := hostKeyCheck(content, "git.example:22", t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{ssh.KeyAlgoED25519, ssh.KeyAlgoRSASHA512, ssh.KeyAlgoRSASHA256, ssh.KeyAlgoRSA}; !reflect.DeepEqual(algos, want) {
		t.Fatalf("algorithms = %v, want %v", algos, want)
	}
	if _, algos, _ := hostKeyCheck(content, "elsewhere.example:22", t.TempDir()); algos != nil {
		t.Fatalf("algorithms of an unknown host = %v, want nil (any)", algos)
	}

	tests := []struct {
		name    string
		host    string
		key     ssh.PublicKey
		known   int
		revoked bool
	}{
		{"known key", "git.example:22", known.PublicKey, -1, false},
		{"known rsa key", "git.example:22", rsaPub, -1, false},
		{"other port", "git.example:2222", other.PublicKey, -1, false},
		{"mismatch", "git.example:22", other.PublicKey, 2, false},
		{"unknown host", "elsewhere.example:22", known.PublicKey, 0, false},
		{"revoked", "git.example:22", revokedKey(t), 0, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := check(tt.host, &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1)}, tt.key)
			if tt.known < 0 {
				if err != nil {
					t.Fatalf("check: %v", err)
				}
				return
			}
			var he *HostKeyError
			if !errors.As(err, &he) || len(he.Known) != tt.known || he.Revoked != tt.revoked || he.Host != tt.host {
				t.Fatalf("err = %#v, want a HostKeyError with %d known keys, revoked %v", err, tt.known, tt.revoked)
			}
			if !strings.Contains(err.Error(), ssh.FingerprintSHA256(tt.key)) {
				t.Fatalf("error %q does not name the offered key", err)
			}
		})
	}
}

// revokedKey is a fixed key, so that the test can revoke it by value.
func revokedKey(t *testing.T) ssh.PublicKey {
	t.Helper()
	k, _, _, _, err := ssh.ParseAuthorizedKey([]byte("ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl"))
	if err != nil {
		t.Fatal(err)
	}
	return k
}

package source

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"

	"github.com/go-git/go-git/v5/plumbing/transport"
	githttp "github.com/go-git/go-git/v5/plumbing/transport/http"
	gitssh "github.com/go-git/go-git/v5/plumbing/transport/ssh"
	"golang.org/x/crypto/ssh"
)

// Auth holds the credentials for a remote. An HTTP(S) remote takes
// Username and Password (basic auth) or a BearerToken, which wins over
// them. An SSH remote (ssh://... or scp-like git@host:org/repo) takes an
// SSHKey and requires KnownHosts: there is no default that trusts any host.
type Auth struct {
	Username, Password, BearerToken string

	// SSHKey is a PEM private key (OpenSSH, PKCS#1, PKCS#8 or SEC 1).
	SSHKey []byte
	// SSHKeyPassphrase decrypts SSHKey when it is encrypted.
	SSHKeyPassphrase string
	// SSHUser is the SSH login; empty means the URL's user, else "git".
	SSHUser string
	// KnownHosts is known_hosts content (as written by ssh-keyscan) that
	// must list the server's host key.
	KnownHosts []byte
}

// The keys of an auth Secret, as Flux names them.
const (
	SecretUsername    = "username"
	SecretPassword    = "password"
	SecretBearerToken = "bearerToken"
	SecretIdentity    = "identity"
	SecretKnownHosts  = "known_hosts"
)

// AuthFromSecret turns the data of a Secret into Auth. With "identity" (a
// PEM private key) it is SSH auth: "known_hosts" is required, "password" is
// the key's passphrase, "username" the SSH user, "identity.pub" is ignored.
// Without it, "username" and "password" are HTTP basic auth and
// "bearerToken" an HTTP bearer token. Errors name the Secret key at fault,
// never a value.
func AuthFromSecret(data map[string][]byte) (*Auth, error) {
	identity, hasIdentity := data[SecretIdentity]
	knownHosts, hasKnownHosts := data[SecretKnownHosts]
	if !hasIdentity {
		if hasKnownHosts {
			return nil, fmt.Errorf("secret key %q is set but %q is missing: SSH auth needs the private key", SecretKnownHosts, SecretIdentity)
		}
		a := &Auth{Username: string(data[SecretUsername]), Password: string(data[SecretPassword]), BearerToken: string(data[SecretBearerToken])}
		if a.Username == "" && a.Password == "" && a.BearerToken == "" {
			return nil, fmt.Errorf("secret has none of the keys %q, %q, %q or %q", SecretUsername, SecretPassword, SecretBearerToken, SecretIdentity)
		}
		return a, nil
	}

	if _, ok := data[SecretBearerToken]; ok {
		return nil, fmt.Errorf("secret keys %q and %q do not go together: one is SSH, the other HTTP auth", SecretIdentity, SecretBearerToken)
	}
	a := &Auth{SSHKey: identity, SSHKeyPassphrase: string(data[SecretPassword]), SSHUser: string(data[SecretUsername]), KnownHosts: knownHosts}
	if _, err := parseIdentity(a.SSHKey, a.SSHKeyPassphrase); err != nil {
		if errors.Is(err, errBadPassphrase) {
			return nil, fmt.Errorf("secret key %q: %w", SecretPassword, err)
		}
		return nil, fmt.Errorf("secret key %q: %w", SecretIdentity, err)
	}
	if !hasKnownHosts {
		return nil, fmt.Errorf("secret key %q is missing: SSH auth needs the server's host keys (ssh-keyscan HOST)", SecretKnownHosts)
	}
	if err := checkKnownHosts(knownHosts); err != nil {
		return nil, fmt.Errorf("secret key %q: %w", SecretKnownHosts, err)
	}
	return a, nil
}

func (a *Auth) hasHTTP() bool {
	return a != nil && (a.Username != "" || a.Password != "" || a.BearerToken != "")
}

func (a *Auth) hasSSH() bool { return a != nil && len(a.SSHKey) > 0 }

// method returns the go-git auth method for rawURL, or an error when the
// credentials do not fit the URL's transport. tmpDir is where the SSH host
// key database is read from a transient file.
func (a *Auth) method(rawURL, tmpDir string) (transport.AuthMethod, error) {
	ep, err := transport.NewEndpoint(rawURL)
	if err != nil {
		return nil, fmt.Errorf("parse URL: %w", err)
	}
	switch ep.Protocol {
	case "http", "https":
		if err := a.checkPlainHTTP(ep); err != nil {
			return nil, err
		}
		switch {
		case a.hasSSH():
			return nil, fmt.Errorf("an %s URL cannot use an SSH identity: use an ssh:// or git@host:org/repo URL, or give username/password or bearerToken", ep.Protocol)
		case a == nil:
			return nil, nil
		case a.BearerToken != "":
			return &githttp.TokenAuth{Token: a.BearerToken}, nil
		case a.Username != "" || a.Password != "":
			return &githttp.BasicAuth{Username: a.Username, Password: a.Password}, nil
		}
		return nil, nil
	case "ssh":
		return a.sshMethod(ep, tmpDir)
	}
	if a.hasHTTP() || a.hasSSH() {
		return nil, fmt.Errorf("a %s URL takes no credentials", ep.Protocol)
	}
	return nil, nil
}

func (a *Auth) sshMethod(ep *transport.Endpoint, tmpDir string) (transport.AuthMethod, error) {
	switch {
	case a.hasSSH():
	case a.hasHTTP():
		return nil, errors.New("an SSH URL cannot use username/password or bearerToken: give an identity (private key) and known_hosts, or use an https:// URL")
	default:
		return nil, errors.New("an SSH URL needs credentials: an identity (private key) and known_hosts")
	}
	signer, err := parseIdentity(a.SSHKey, a.SSHKeyPassphrase)
	if err != nil {
		return nil, fmt.Errorf("ssh identity: %w", err)
	}
	if len(bytes.TrimSpace(a.KnownHosts)) == 0 {
		return nil, errors.New("an SSH URL needs known_hosts with the server's host key; none is given")
	}
	port := ep.Port
	if port <= 0 {
		port = 22
	}
	hostPort := net.JoinHostPort(ep.Host, strconv.Itoa(port))
	check, algorithms, err := hostKeyCheck(a.KnownHosts, hostPort, tmpDir)
	if err != nil {
		return nil, err
	}
	user := a.SSHUser
	if user == "" {
		user = ep.User
	}
	if user == "" {
		user = "git"
	}
	return &gitssh.PublicKeys{User: user, Signer: signer, HostKeyCallbackHelper: gitssh.HostKeyCallbackHelper{
		HostKeyCallback: check, HostKeyAlgorithms: algorithms,
	}}, nil
}

// errBadPassphrase marks a passphrase that does not decrypt the key.
var errBadPassphrase = errors.New("the passphrase does not decrypt the private key")

// parseIdentity parses a PEM private key, decrypting it with passphrase
// when it is encrypted. A passphrase for a plain key is ignored.
func parseIdentity(pemBytes []byte, passphrase string) (ssh.Signer, error) {
	if len(bytes.TrimSpace(pemBytes)) == 0 {
		return nil, errors.New("the private key is empty")
	}
	signer, err := ssh.ParsePrivateKey(pemBytes)
	var missing *ssh.PassphraseMissingError
	if errors.As(err, &missing) {
		if passphrase == "" {
			return nil, fmt.Errorf("the private key is encrypted and no passphrase (secret key %q) is given", SecretPassword)
		}
		signer, err = ssh.ParsePrivateKeyWithPassphrase(pemBytes, []byte(passphrase))
		if err != nil {
			return nil, fmt.Errorf("%w: %w", errBadPassphrase, err)
		}
	}
	if err != nil {
		return nil, err
	}
	return signer, nil
}

// explainAuth makes an SSH authentication failure say so.
func explainAuth(err error, auth transport.AuthMethod) error {
	pk, ok := auth.(*gitssh.PublicKeys)
	if !ok || err == nil || !strings.Contains(err.Error(), "ssh: unable to authenticate") {
		return err
	}
	return fmt.Errorf("ssh authentication as %q with key %s failed (is it a deploy key of the repository?): %w",
		pk.User, ssh.FingerprintSHA256(pk.Signer.PublicKey()), err)
}

// IsAuthError reports a fetch the remote refused for the credentials: none
// given where some are needed, or wrong ones.
func IsAuthError(err error) bool {
	return errors.Is(err, transport.ErrAuthenticationRequired) || errors.Is(err, transport.ErrAuthorizationFailed) ||
		(err != nil && strings.Contains(err.Error(), "ssh: unable to authenticate"))
}

package gitserver

import (
	"crypto/ed25519"
	"crypto/rand"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"sync"

	gliderssh "github.com/gliderlabs/ssh"
	gossh "golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/knownhosts"
)

// SSHServer serves the bare repositories of a Server over SSH, as a Git
// host does: a client authenticates with a public key and runs
// git-upload-pack or git-receive-pack on a repository path, which the server
// executes with the real git binary. The same repository is reachable over
// HTTP (Server.URL) and SSH (SSHServer.URL).
type SSHServer struct {
	git     *Server
	srv     *gliderssh.Server
	ln      net.Listener
	hostKey gossh.PublicKey
	done    chan error

	mu         sync.Mutex
	authorized []gossh.PublicKey
	closed     bool
}

// StartSSH serves the repositories of s over SSH on 127.0.0.1 with a random
// port and a fresh ed25519 host key. Any user name is accepted; the client
// must authenticate with one of the authorized public keys (more can be
// added with Authorize). Close it before the Server.
func (s *Server) StartSSH(authorized ...gossh.PublicKey) (*SSHServer, error) {
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("generate ssh host key: %w", err)
	}
	signer, err := gossh.NewSignerFromKey(priv)
	if err != nil {
		return nil, fmt.Errorf("ssh host key: %w", err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("listen on loopback: %w", err)
	}
	ss := &SSHServer{git: s, ln: ln, hostKey: signer.PublicKey(), done: make(chan error, 1), authorized: authorized}
	ss.srv = &gliderssh.Server{
		Handler:          ss.handle,
		PublicKeyHandler: ss.allowed,
	}
	ss.srv.AddHostKey(signer)
	go func() { ss.done <- ss.srv.Serve(ln) }()
	return ss, nil
}

// Authorize adds a public key that may log in.
func (ss *SSHServer) Authorize(key gossh.PublicKey) {
	ss.mu.Lock()
	ss.authorized = append(ss.authorized, key)
	ss.mu.Unlock()
}

func (ss *SSHServer) allowed(_ gliderssh.Context, key gliderssh.PublicKey) bool {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	for _, k := range ss.authorized {
		if gliderssh.KeysEqual(key, k) {
			return true
		}
	}
	return false
}

// Addr is the server's host:port.
func (ss *SSHServer) Addr() string { return ss.ln.Addr().String() }

// Port is the server's TCP port.
func (ss *SSHServer) Port() int { return ss.ln.Addr().(*net.TCPAddr).Port }

// URL returns the ssh:// clone URL of repo for user git, e.g.
// ssh://git@127.0.0.1:PORT/shop.git. A name without the .git suffix gets it.
func (ss *SSHServer) URL(repo string) string {
	if filepath.Ext(repo) != ".git" {
		repo += ".git"
	}
	return "ssh://git@" + ss.Addr() + "/" + repo
}

// HostKey is the server's public host key.
func (ss *SSHServer) HostKey() gossh.PublicKey { return ss.hostKey }

// KnownHostsLine is the known_hosts line that trusts this server, e.g.
// "[127.0.0.1]:PORT ssh-ed25519 AAAA...".
func (ss *SSHServer) KnownHostsLine() string {
	return knownhosts.Line([]string{knownhosts.Normalize(ss.Addr())}, ss.hostKey)
}

// Close stops the server and drops open connections.
func (ss *SSHServer) Close() error {
	ss.mu.Lock()
	if ss.closed {
		ss.mu.Unlock()
		return nil
	}
	ss.closed = true
	ss.mu.Unlock()
	err := ss.srv.Close()
	if serveErr := <-ss.done; serveErr != nil && !errors.Is(serveErr, gliderssh.ErrServerClosed) {
		err = errors.Join(err, serveErr)
	}
	if err != nil {
		return fmt.Errorf("close ssh git server: %w", err)
	}
	return nil
}

// exitFatal is git's exit status for a fatal error.
const exitFatal = 128

func (ss *SSHServer) handle(sess gliderssh.Session) {
	code, err := ss.run(sess)
	if err != nil {
		fmt.Fprintf(sess.Stderr(), "fatal: %v\n", err)
	}
	_ = sess.Exit(code)
}

// run executes the session's git command and returns its exit status.
func (ss *SSHServer) run(sess gliderssh.Session) (int, error) {
	service, repo, err := parseGitCommand(sess.Command())
	if err != nil {
		return exitFatal, fmt.Errorf("%w (command %q)", err, sess.RawCommand())
	}
	dir, err := ss.repoDir(repo)
	if err != nil {
		return exitFatal, err
	}

	cmd := exec.CommandContext(sess.Context(), ss.git.gitPath, service, dir)
	cmd.Env = gitEnv(ss.git.home)
	for _, kv := range sess.Environ() {
		if strings.HasPrefix(kv, "GIT_PROTOCOL=") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Stdout = sess
	cmd.Stderr = sess.Stderr()
	// A pipe rather than cmd.Stdin = sess: Wait must not wait for the
	// client to close its side once git has exited.
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return exitFatal, fmt.Errorf("%s: %w", service, err)
	}
	if err := cmd.Start(); err != nil {
		return exitFatal, fmt.Errorf("%s: %w", service, err)
	}
	go func() {
		_, _ = io.Copy(stdin, sess)
		_ = stdin.Close()
	}()
	err = cmd.Wait()
	var exitErr *exec.ExitError
	switch {
	case errors.As(err, &exitErr):
		return exitErr.ExitCode(), nil // git has told the client why
	case err != nil:
		return exitFatal, fmt.Errorf("%s: %w", service, err)
	}

	if service == "receive-pack" {
		ss.git.mu.Lock()
		fn := ss.git.onPush
		ss.git.mu.Unlock()
		if rel, err := filepath.Rel(ss.git.root, dir); err == nil && fn != nil {
			fn(ss.URL(filepath.ToSlash(rel)))
		}
	}
	return 0, nil
}

// parseGitCommand accepts "git-upload-pack PATH", "git-receive-pack PATH"
// and their "git upload-pack PATH" spellings, and returns the git
// subcommand and the path.
func parseGitCommand(args []string) (service, repo string, err error) {
	if len(args) == 3 && args[0] == "git" {
		args = []string{"git-" + args[1], args[2]}
	}
	if len(args) != 2 {
		return "", "", errors.New("only git-upload-pack and git-receive-pack with one repository path are served")
	}
	switch args[0] {
	case "git-upload-pack", "git-receive-pack":
		return strings.TrimPrefix(args[0], "git-"), args[1], nil
	}
	return "", "", fmt.Errorf("%s is not served; only git-upload-pack and git-receive-pack are", strconv.Quote(args[0]))
}

// repoDir maps a requested path ("/shop.git", "shop.git", "shop") to a bare
// repository below the server's root, refusing paths that leave it.
func (ss *SSHServer) repoDir(repo string) (string, error) {
	p := path.Clean(strings.TrimLeft(repo, "/"))
	if p == "." || !filepath.IsLocal(filepath.FromSlash(p)) {
		return "", fmt.Errorf("repository %q: invalid path", repo)
	}
	candidates := []string{p}
	if path.Ext(p) != ".git" {
		candidates = append(candidates, p+".git")
	}
	for _, c := range candidates {
		dir := filepath.Join(ss.git.root, filepath.FromSlash(c))
		if info, err := os.Stat(dir); err == nil && info.IsDir() {
			return dir, nil
		}
	}
	return "", fmt.Errorf("repository %q not found", repo)
}

// SSHKey is a client key pair for tests: the private key in OpenSSH PEM
// form (as it goes into a Secret's "identity") and its public key.
type SSHKey struct {
	PrivateKeyPEM []byte
	PublicKey     gossh.PublicKey
}

// AuthorizedKey is the public key in authorized_keys form ("ssh-ed25519
// AAAA...", the Secret's "identity.pub").
func (k *SSHKey) AuthorizedKey() string {
	return strings.TrimSpace(string(gossh.MarshalAuthorizedKey(k.PublicKey)))
}

// NewSSHKey generates an ed25519 client key, encrypted with passphrase
// unless it is empty.
func NewSSHKey(passphrase string) (*SSHKey, error) {
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("generate ssh key: %w", err)
	}
	var block *pem.Block
	if passphrase == "" {
		block, err = gossh.MarshalPrivateKey(priv, "driftguard test")
	} else {
		block, err = gossh.MarshalPrivateKeyWithPassphrase(priv, "driftguard test", []byte(passphrase))
	}
	if err != nil {
		return nil, fmt.Errorf("encode ssh key: %w", err)
	}
	sshPub, err := gossh.NewPublicKey(pub)
	if err != nil {
		return nil, fmt.Errorf("ssh public key: %w", err)
	}
	return &SSHKey{PrivateKeyPEM: pem.EncodeToMemory(block), PublicKey: sshPub}, nil
}

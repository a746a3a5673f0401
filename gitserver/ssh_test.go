package gitserver

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	gossh "golang.org/x/crypto/ssh"
)

// sshClient is the system ssh, as git runs it, with one identity and one
// known_hosts file and no user or system configuration.
type sshClient struct {
	home    string
	command string
}

func newSSHClient(t *testing.T, s *Server, key *SSHKey, knownHosts string) *sshClient {
	t.Helper()
	if _, err := exec.LookPath("ssh"); err != nil {
		t.Skip("no ssh client on this machine")
	}
	dir := t.TempDir()
	keyFile := filepath.Join(dir, "id")
	khFile := filepath.Join(dir, "known_hosts")
	if err := os.WriteFile(keyFile, key.PrivateKeyPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(khFile, []byte(knownHosts+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := fmt.Sprintf("ssh -F /dev/null -i %s -o IdentitiesOnly=yes -o BatchMode=yes -o StrictHostKeyChecking=yes -o UserKnownHostsFile=%s -o GlobalKnownHostsFile=/dev/null", keyFile, khFile)
	return &sshClient{home: s.home, command: cmd}
}

// git runs git in dir with this ssh client.
func (c *sshClient) git(t *testing.T, dir string, args ...string) (string, error) {
	t.Helper()
	cmd := exec.CommandContext(t.Context(), "git", args...)
	cmd.Dir = dir
	cmd.Env = append(gitEnv(c.home), "GIT_SSH_COMMAND="+c.command)
	var out bytes.Buffer
	cmd.Stdout = &out
	cmd.Stderr = &out
	err := cmd.Run()
	return strings.TrimSpace(out.String()), err
}

func startSSH(t *testing.T, s *Server, keys ...gossh.PublicKey) *SSHServer {
	t.Helper()
	ss, err := s.StartSSH(keys...)
	if err != nil {
		t.Fatalf("StartSSH: %v", err)
	}
	t.Cleanup(func() {
		if err := ss.Close(); err != nil {
			t.Errorf("close: %v", err)
		}
	})
	return ss
}

func TestSSHCloneAndPush(t *testing.T) {
	s := startServer(t)
	key, err := NewSSHKey("")
	if err != nil {
		t.Fatal(err)
	}
	ss := startSSH(t, s, key.PublicKey)
	pushed := make(chan string, 4)
	s.OnPush(func(url string) { pushed <- url })

	r, err := s.NewRepo("shop")
	if err != nil {
		t.Fatal(err)
	}
	if err := r.WriteFile("a.txt", "over http\n"); err != nil {
		t.Fatal(err)
	}
	sha1, err := r.CommitAndPush("first")
	if err != nil {
		t.Fatal(err)
	}
	<-pushed // the HTTP push

	if got, want := ss.URL("shop"), "ssh://git@"+ss.Addr()+"/shop.git"; got != want {
		t.Fatalf("URL = %q, want %q", got, want)
	}
	if !strings.HasPrefix(ss.KnownHostsLine(), fmt.Sprintf("[127.0.0.1]:%d ssh-ed25519 ", ss.Port())) {
		t.Fatalf("known_hosts line = %q", ss.KnownHostsLine())
	}

	c := newSSHClient(t, s, key, ss.KnownHostsLine())
	dir := filepath.Join(t.TempDir(), "clone")
	if out, err := c.git(t, t.TempDir(), "clone", "--quiet", ss.URL("shop"), dir); err != nil {
		t.Fatalf("clone over ssh: %v: %s", err, out)
	}
	if head, err := c.git(t, dir, "rev-parse", "HEAD"); err != nil || head != sha1 {
		t.Fatalf("HEAD = %q (%v), want %s", head, err, sha1)
	}

	// Push over SSH; the HTTP side sees it and OnPush names the SSH URL.
	if err := os.WriteFile(filepath.Join(dir, "b.txt"), []byte("over ssh\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"add", "b.txt"},
		{"-c", "user.name=t", "-c", "user.email=t@t.invalid", "-c", "commit.gpgsign=false", "commit", "--quiet", "-m", "second"},
		{"push", "--quiet", "origin", "HEAD:main"},
	} {
		if out, err := c.git(t, dir, args...); err != nil {
			t.Fatalf("git %v: %v: %s", args, err, out)
		}
	}
	sha2, err := c.git(t, dir, "rev-parse", "HEAD")
	if err != nil {
		t.Fatal(err)
	}
	refs, err := runGit(t.Context(), s.home, t.TempDir(), "ls-remote", s.URL("shop"), "refs/heads/main")
	if err != nil || !strings.HasPrefix(refs, sha2) {
		t.Fatalf("HTTP ls-remote = %q (%v), want %s", refs, err, sha2)
	}
	select {
	case got := <-pushed:
		if got != ss.URL("shop") {
			t.Fatalf("OnPush got %q, want %q", got, ss.URL("shop"))
		}
	default:
		t.Fatal("OnPush was not called after the ssh push")
	}
}

func TestSSHRefusals(t *testing.T) {
	s := startServer(t)
	key, err := NewSSHKey("")
	if err != nil {
		t.Fatal(err)
	}
	other, err := NewSSHKey("")
	if err != nil {
		t.Fatal(err)
	}
	ss := startSSH(t, s, key.PublicKey)
	if _, err := s.NewRepo("shop"); err != nil {
		t.Fatal(err)
	}
	otherHost := startSSH(t, s, key.PublicKey)
	wrongHost := strings.Replace(otherHost.KnownHostsLine(), otherHost.Addr(), ss.Addr(), 1)
	wrongHost = strings.Replace(wrongHost, fmt.Sprint(otherHost.Port()), fmt.Sprint(ss.Port()), 1)

	tests := []struct {
		name       string
		key        *SSHKey
		knownHosts string
		url        string
		want       string
	}{
		{"unauthorized key", other, ss.KnownHostsLine(), ss.URL("shop"), "Permission denied"},
		{"wrong host key", key, wrongHost, ss.URL("shop"), "Host key verification failed"},
		{"missing repository", key, ss.KnownHostsLine(), ss.URL("nope"), `repository "/nope.git" not found`},
		{"path outside the root", key, ss.KnownHostsLine(), "ssh://git@" + ss.Addr() + "/../x.git", "invalid path"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := newSSHClient(t, s, tt.key, tt.knownHosts)
			out, err := c.git(t, t.TempDir(), "ls-remote", tt.url)
			if err == nil || !strings.Contains(out, tt.want) {
				t.Fatalf("ls-remote = %v: %s; want an error containing %q", err, out, tt.want)
			}
		})
	}

	t.Run("other commands", func(t *testing.T) {
		signer, err := gossh.ParsePrivateKey(key.PrivateKeyPEM)
		if err != nil {
			t.Fatal(err)
		}
		client, err := gossh.Dial("tcp", ss.Addr(), &gossh.ClientConfig{
			User: "git", Auth: []gossh.AuthMethod{gossh.PublicKeys(signer)},
			HostKeyCallback: gossh.FixedHostKey(ss.HostKey()),
		})
		if err != nil {
			t.Fatal(err)
		}
		defer client.Close()
		for _, cmd := range []string{"ls /", "git-upload-archive '/shop.git'", "git-upload-pack"} {
			sess, err := client.NewSession()
			if err != nil {
				t.Fatal(err)
			}
			out, err := sess.CombinedOutput(cmd)
			var exit *gossh.ExitError
			if !errors.As(err, &exit) || exit.ExitStatus() != exitFatal || !strings.Contains(string(out), "only git-upload-pack and git-receive-pack") {
				t.Errorf("%s: %v: %s; want exit status %d", cmd, err, out, exitFatal)
			}
		}
	})
}

func TestParseGitCommand(t *testing.T) {
	tests := []struct {
		args          []string
		service, repo string
		err           bool
	}{
		{[]string{"git-upload-pack", "/shop.git"}, "upload-pack", "/shop.git", false},
		{[]string{"git-receive-pack", "shop"}, "receive-pack", "shop", false},
		{[]string{"git", "upload-pack", "/a/b.git"}, "upload-pack", "/a/b.git", false},
		{[]string{"git-upload-pack"}, "", "", true},
		{[]string{"sh", "-c"}, "", "", true},
		{nil, "", "", true},
	}
	for _, tt := range tests {
		service, repo, err := parseGitCommand(tt.args)
		if service != tt.service || repo != tt.repo || (err != nil) != tt.err {
			t.Errorf("parseGitCommand(%q) = %q %q %v", tt.args, service, repo, err)
		}
	}
}

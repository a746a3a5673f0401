package source

import (
	"bufio"
	"bytes"
	"crypto/ed25519"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/knownhosts"
)

// HostKeyError is an SSH server whose host key known_hosts does not trust.
type HostKeyError struct {
	// Host is the host:port dialed.
	Host string
	// Offered is the server's key: its type and SHA256 fingerprint.
	Offered string
	// Known are the keys known_hosts lists for Host, in the same form; none
	// means Host is not in known_hosts at all.
	Known []string
	// Revoked is set when known_hosts marks the offered key @revoked.
	Revoked bool
}

func (e *HostKeyError) Error() string {
	switch {
	case e.Revoked:
		return fmt.Sprintf("ssh host key %s of %s is revoked in known_hosts", e.Offered, e.Host)
	case len(e.Known) == 0:
		return fmt.Sprintf("ssh host %s is not in known_hosts (it offered %s)", e.Host, e.Offered)
	}
	return fmt.Sprintf("ssh host key mismatch for %s: it offered %s, known_hosts has %s", e.Host, e.Offered, strings.Join(e.Known, ", "))
}

func describeKey(k ssh.PublicKey) string { return k.Type() + " " + ssh.FingerprintSHA256(k) }

// checkKnownHosts reports the first line of content that is not a
// known_hosts entry, and content without any entry.
func checkKnownHosts(content []byte) error {
	entries := 0
	sc := bufio.NewScanner(bytes.NewReader(content))
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for n := 1; sc.Scan(); n++ {
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 || line[0] == '#' {
			continue
		}
		if _, _, _, _, _, err := ssh.ParseKnownHosts(line); err != nil {
			return fmt.Errorf("line %d: %w", n, err)
		}
		entries++
	}
	if err := sc.Err(); err != nil {
		return err
	}
	if entries == 0 {
		return errors.New("no host keys (expected lines like \"HOST ssh-ed25519 AAAA...\" from ssh-keyscan HOST)")
	}
	return nil
}

// hostKeyCheck builds the host key callback of known_hosts content and the
// host key algorithms to ask hostPort for: those of the keys listed for
// it, so that a server with several host keys shows the one we know.
// The knownhosts package reads files only, so content passes through a
// short-lived file below tmpDir.
func hostKeyCheck(content []byte, hostPort, tmpDir string) (ssh.HostKeyCallback, []string, error) {
	if err := checkKnownHosts(content); err != nil {
		return nil, nil, fmt.Errorf("known_hosts: %w", err)
	}
	if err := os.MkdirAll(tmpDir, 0o755); err != nil {
		return nil, nil, fmt.Errorf("known_hosts: %w", err)
	}
	dir, err := os.MkdirTemp(tmpDir, "known-hosts-")
	if err != nil {
		return nil, nil, fmt.Errorf("known_hosts: %w", err)
	}
	defer os.RemoveAll(dir)
	file := filepath.Join(dir, "known_hosts")
	if err := os.WriteFile(file, content, 0o600); err != nil {
		return nil, nil, fmt.Errorf("known_hosts: %w", err)
	}
	db, err := knownhosts.New(file)
	if err != nil {
		return nil, nil, errors.New(strings.ReplaceAll(err.Error(), file, "known_hosts"))
	}

	var algorithms []string
	if !bytes.Contains(content, []byte("@cert-authority")) {
		algorithms = knownAlgorithms(db, hostPort)
	}
	check := func(host string, remote net.Addr, key ssh.PublicKey) error {
		err := db(host, remote, key)
		var keyErr *knownhosts.KeyError
		var revoked *knownhosts.RevokedError
		switch {
		case errors.As(err, &revoked):
			return &HostKeyError{Host: host, Offered: describeKey(key), Revoked: true}
		case errors.As(err, &keyErr):
			he := &HostKeyError{Host: host, Offered: describeKey(key)}
			for _, k := range keyErr.Want {
				he.Known = append(he.Known, describeKey(k.Key))
			}
			return he
		}
		return err
	}
	return check, algorithms, nil
}

// knownAlgorithms returns the host key algorithms of the keys db lists for
// hostPort, or nil (any) when it lists none.
func knownAlgorithms(db ssh.HostKeyCallback, hostPort string) []string {
	// A key no known_hosts lists: checking it makes the database tell
	// which keys it has for the host.
	probe, err := ssh.NewPublicKey(ed25519.NewKeyFromSeed(make([]byte, ed25519.SeedSize)).Public())
	if err != nil {
		return nil
	}
	var keyErr *knownhosts.KeyError
	if err := db(hostPort, &net.TCPAddr{IP: net.IPv4zero}, probe); !errors.As(err, &keyErr) {
		return nil
	}
	var out []string
	seen := map[string]bool{}
	for _, k := range keyErr.Want {
		algos := []string{k.Key.Type()}
		if k.Key.Type() == ssh.KeyAlgoRSA {
			algos = []string{ssh.KeyAlgoRSASHA512, ssh.KeyAlgoRSASHA256, ssh.KeyAlgoRSA}
		}
		for _, a := range algos {
			if !seen[a] {
				seen[a] = true
				out = append(out, a)
			}
		}
	}
	return out
}

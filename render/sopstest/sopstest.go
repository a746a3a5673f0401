// Package sopstest encrypts and decrypts files for tests with the sops CLI
// itself (`sops --encrypt --age RECIPIENT`, `sops --decrypt`), so that tests
// decrypt exactly what users commit. tools/build.sh builds the CLI, at the
// version tools/go.mod requires, into the tools folder; the tests do not
// link the sops library
// (its root package imports every KMS client: about 575 packages that
// the guard does not link and a cold make test would compile again).
package sopstest

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"filippo.io/age"

	"github.com/driftguard/driftguard/devenv"
)

// Key is a new age key pair.
type Key struct {
	Identity  string // AGE-SECRET-KEY-1...
	Recipient string // age1...
}

// NewKey generates an age key pair.
func NewKey() (Key, error) {
	id, err := age.GenerateX25519Identity()
	if err != nil {
		return Key{}, err
	}
	return Key{Identity: id.String(), Recipient: id.Recipient().String()}, nil
}

// Options are the sops CLI's encryption options that tests use.
type Options struct {
	// JSON selects the JSON store; the default is YAML.
	JSON bool
	// EncryptedRegex encrypts only the values of matching keys, as
	// --encrypted-regex does (for Kubernetes Secrets: ^(data|stringData)$).
	// Empty encrypts every value but keys ending in _unencrypted, the CLI's
	// default.
	EncryptedRegex string
	// The other rules of the sops CLI, as --unencrypted-suffix,
	// --encrypted-suffix, --unencrypted-regex, --encrypted-comment-regex
	// and --unencrypted-comment-regex; at most one rule may be set.
	UnencryptedSuffix       string
	EncryptedSuffix         string
	UnencryptedRegex        string
	EncryptedCommentRegex   string
	UnencryptedCommentRegex string
	// MACOnlyEncrypted computes the MAC over the encrypted values only, as
	// --mac-only-encrypted does.
	MACOnlyEncrypted bool
}

func (o Options) flags() []string {
	var args []string
	for _, f := range []struct{ name, value string }{
		{"--encrypted-regex", o.EncryptedRegex},
		{"--unencrypted-suffix", o.UnencryptedSuffix},
		{"--encrypted-suffix", o.EncryptedSuffix},
		{"--unencrypted-regex", o.UnencryptedRegex},
		{"--encrypted-comment-regex", o.EncryptedCommentRegex},
		{"--unencrypted-comment-regex", o.UnencryptedCommentRegex},
	} {
		if f.value != "" {
			args = append(args, f.name, f.value)
		}
	}
	if o.MACOnlyEncrypted {
		args = append(args, "--mac-only-encrypted")
	}
	return args
}

// Encrypt encrypts plain (a YAML or JSON file) for the age recipients with
// `sops --encrypt --age RECIPIENTS` and the rule's flag: a new data key,
// the values encrypted with AES-GCM, the MAC over the plain values, the
// data key encrypted for each recipient. (The CLI's encrypt subcommand
// takes neither --mac-only-encrypted nor the comment rules.)
func Encrypt(plain []byte, o Options, recipients ...string) ([]byte, error) {
	args := append([]string{"--encrypt", "--age", strings.Join(recipients, ",")}, o.flags()...)
	return run(plain, o.JSON, nil, args...)
}

// Decrypt decrypts a SOPS file with `sops --decrypt`, with the age
// identities given (and no other key source), and verifies its MAC: the
// reference that tests compare other decryption with.
func Decrypt(data []byte, json bool, identities ...string) ([]byte, error) {
	return run(data, json, []string{"SOPS_AGE_KEY=" + strings.Join(identities, "\n")}, "--decrypt")
}

// run runs the sops CLI with args on input, written to a file in an empty
// folder that is also its home, with an empty configuration file, so that
// no .sops.yaml, key file or SSH key of the machine takes part, and
// returns its output.
func run(input []byte, json bool, env []string, args ...string) ([]byte, error) {
	mode := args[0]
	bin, err := binary()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "sopstest-")
	if err != nil {
		return nil, err
	}
	defer func() { _ = os.RemoveAll(dir) }()
	config := filepath.Join(dir, ".sops.yaml")
	if err := os.WriteFile(config, nil, 0o600); err != nil {
		return nil, err
	}
	format := "yaml"
	if json {
		format = "json"
	}
	file := filepath.Join(dir, "file."+format)
	if err := os.WriteFile(file, input, 0o600); err != nil {
		return nil, err
	}
	args = append([]string{"--config", config}, args...)
	args = append(args, "--input-type", format, "--output-type", format, file)
	cmd := exec.Command(bin, args...)
	cmd.Dir = dir
	cmd.Env = append([]string{"HOME=" + dir, "XDG_CONFIG_HOME=" + dir}, env...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("sops %s: %w: %s", mode, err, strings.TrimSpace(stderr.String()))
	}
	return stdout.Bytes(), nil
}

// binary is the sops CLI the helpers run: sops in the tools folder
// (devenv.DefaultBinDir: KUBEBUILDER_ASSETS, which make sets, or the
// cache tools/build.sh builds it into).
func binary() (string, error) {
	bin := filepath.Join(devenv.DefaultBinDir(), "sops")
	if _, err := os.Stat(bin); err != nil {
		return "", fmt.Errorf("sopstest: no sops CLI (tools/build.sh test builds it): %w", err)
	}
	return bin, nil
}

// Package sopstest encrypts files for tests the way the sops CLI does
// (`sops encrypt --age RECIPIENT`), with the sops library itself, so tests
// decrypt exactly what users commit.
package sopstest

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"filippo.io/age"
	"github.com/getsops/sops/v3"
	"github.com/getsops/sops/v3/aes"
	sopsage "github.com/getsops/sops/v3/age"
	"github.com/getsops/sops/v3/config"
	"github.com/getsops/sops/v3/keyservice"
	sopsjson "github.com/getsops/sops/v3/stores/json"
	sopsyaml "github.com/getsops/sops/v3/stores/yaml"
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

// Encrypt encrypts plain (a YAML or JSON file) for the age recipients as
// `sops encrypt` does: a new data key, the values encrypted with AES-GCM,
// the MAC over the plain values, the data key encrypted for each recipient.
func Encrypt(plain []byte, o Options, recipients ...string) ([]byte, error) {
	type store interface {
		LoadPlainFile([]byte) (sops.TreeBranches, error)
		EmitEncryptedFile(sops.Tree) ([]byte, error)
	}
	var st store = sopsyaml.NewStore(&config.YAMLStoreConfig{})
	if o.JSON {
		st = sopsjson.NewStore(&config.JSONStoreConfig{})
	}
	branches, err := st.LoadPlainFile(plain)
	if err != nil {
		return nil, err
	}
	keys, err := sopsage.MasterKeysFromRecipients(strings.Join(recipients, ","))
	if err != nil {
		return nil, err
	}
	var group sops.KeyGroup
	for _, k := range keys {
		group = append(group, k)
	}
	md := sops.Metadata{
		KeyGroups:               []sops.KeyGroup{group},
		Version:                 sopsVersion,
		EncryptedRegex:          o.EncryptedRegex,
		UnencryptedSuffix:       o.UnencryptedSuffix,
		EncryptedSuffix:         o.EncryptedSuffix,
		UnencryptedRegex:        o.UnencryptedRegex,
		EncryptedCommentRegex:   o.EncryptedCommentRegex,
		UnencryptedCommentRegex: o.UnencryptedCommentRegex,
		MACOnlyEncrypted:        o.MACOnlyEncrypted,
	}
	if md.EncryptedRegex == "" && md.UnencryptedSuffix == "" && md.EncryptedSuffix == "" && md.UnencryptedRegex == "" &&
		md.EncryptedCommentRegex == "" && md.UnencryptedCommentRegex == "" {
		md.UnencryptedSuffix = "_unencrypted"
	}
	tree := sops.Tree{Branches: branches, Metadata: md}
	dataKey, errs := tree.GenerateDataKeyWithKeyServices([]keyservice.KeyServiceClient{keyservice.NewLocalClient()})
	if len(errs) > 0 {
		return nil, fmt.Errorf("generate data key: %v", errs)
	}
	// As the CLI's common.EncryptTree: encrypt, then the MAC with the
	// modification time as additional data.
	cipher := aes.NewCipher()
	mac, err := tree.Encrypt(dataKey, cipher)
	if err != nil {
		return nil, err
	}
	tree.Metadata.LastModified = time.Now().UTC()
	if tree.Metadata.MessageAuthenticationCode, err = cipher.Encrypt(mac, dataKey, tree.Metadata.LastModified.Format(time.RFC3339)); err != nil {
		return nil, err
	}
	return st.EmitEncryptedFile(tree)
}

// Decrypt decrypts a SOPS file with the sops library itself, as
// `sops decrypt` does, with the age identities given (and no other key
// source), and verifies its MAC: the reference that tests compare other
// decryption with.
func Decrypt(data []byte, json bool, identities ...string) ([]byte, error) {
	type store interface {
		LoadEncryptedFile([]byte) (sops.Tree, error)
		EmitPlainFile(sops.TreeBranches) ([]byte, error)
	}
	var st store = sopsyaml.NewStore(&config.YAMLStoreConfig{})
	if json {
		st = sopsjson.NewStore(&config.JSONStoreConfig{})
	}
	tree, err := st.LoadEncryptedFile(data)
	if err != nil {
		return nil, err
	}
	var ids sopsage.ParsedIdentities
	if err := ids.Import(identities...); err != nil {
		return nil, err
	}
	svc := keyservice.NewCustomLocalClient(ageService{ids: ids})
	dataKey, err := tree.Metadata.GetDataKeyWithKeyServices([]keyservice.KeyServiceClient{svc}, sops.DefaultDecryptionOrder)
	if err != nil {
		return nil, err
	}
	cipher := aes.NewCipher()
	mac, err := tree.Decrypt(dataKey, cipher)
	if err != nil {
		return nil, err
	}
	stored, err := cipher.Decrypt(tree.Metadata.MessageAuthenticationCode, dataKey, tree.Metadata.LastModified.Format(time.RFC3339))
	if err != nil {
		return nil, err
	}
	if stored != mac {
		return nil, sops.MacMismatch
	}
	return st.EmitPlainFile(tree.Branches)
}

// ageService decrypts data keys with age identities held in memory; it
// never reads SOPS_AGE_KEY or key files.
type ageService struct {
	ids sopsage.ParsedIdentities
}

func (s ageService) Encrypt(context.Context, *keyservice.EncryptRequest) (*keyservice.EncryptResponse, error) {
	return nil, errors.New("encryption is not supported")
}

func (s ageService) Decrypt(_ context.Context, req *keyservice.DecryptRequest) (*keyservice.DecryptResponse, error) {
	ak := req.GetKey().GetAgeKey()
	if ak == nil {
		return nil, errors.New("only age keys are supported")
	}
	mk := &sopsage.MasterKey{Recipient: ak.Recipient, EncryptedKey: string(req.GetCiphertext())}
	s.ids.ApplyToMasterKey(mk)
	plain, err := mk.Decrypt()
	if err != nil {
		return nil, err
	}
	return &keyservice.DecryptResponse{Plaintext: plain}, nil
}

// sopsVersion is the version of the sops library in go.mod, which the CLI
// of the same version writes into the metadata.
const sopsVersion = "3.13.3"

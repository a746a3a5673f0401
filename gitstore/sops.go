package gitstore

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/getsops/sops/v3"
	"github.com/getsops/sops/v3/aes"
	sopsage "github.com/getsops/sops/v3/age"
	"github.com/getsops/sops/v3/config"
	"github.com/getsops/sops/v3/keyservice"
	"github.com/getsops/sops/v3/logging"
	sopsjson "github.com/getsops/sops/v3/stores/json"
	sopsyaml "github.com/getsops/sops/v3/stores/yaml"
	"github.com/sirupsen/logrus"
)

// ageKeys are the parsed age identities of one render.
type ageKeys struct {
	ids sopsage.ParsedIdentities
}

// CheckAgeKey reports whether s holds one or more age identities
// (AGE-SECRET-KEY-1..., as age-keygen writes them, comments allowed). The
// error never repeats the text.
func CheckAgeKey(s string) error {
	var ids sopsage.ParsedIdentities
	if err := ids.Import(s); err != nil || len(ids) == 0 {
		return errors.New("not an age identity (AGE-SECRET-KEY-1...)")
	}
	return nil
}

func parseAgeKeys(keys []string) (ageKeys, error) {
	var out ageKeys
	for i, k := range keys {
		if err := CheckAgeKey(k); err != nil {
			return ageKeys{}, fmt.Errorf("age key %d: %w", i+1, err)
		}
		_ = out.ids.Import(k)
	}
	return out, nil
}

var (
	sopsYAMLKey = regexp.MustCompile(`(?m)^sops:[ \t]*(#.*)?\r?$`)
	sopsJSONKey = regexp.MustCompile(`"sops"\s*:\s*\{`)
	quietSOPS   sync.Once
)

// isSOPS reports whether data, the content of manifest p, is a
// SOPS-encrypted file: a top-level sops key with a MAC.
func isSOPS(p string, data []byte) bool {
	if !bytes.Contains(data, []byte("ENC[")) || !bytes.Contains(data, []byte("mac")) {
		return false
	}
	if manifestFormat(p) == "json" {
		return sopsJSONKey.Match(data)
	}
	return sopsYAMLKey.Match(data)
}

// readManifest reads manifest p and decrypts it when it is
// SOPS-encrypted; encLines are then the lines where the documents of the
// encrypted file start. Errors are a *RenderError naming p.
func (r *renderer) readManifest(p string) (data []byte, encLines []int, err error) {
	data, err = fs.ReadFile(r.fsys, p)
	if err != nil {
		return nil, nil, &RenderError{Path: p, Err: fmt.Errorf("read: %w", unwrapPathError(err))}
	}
	if !isSOPS(p, data) {
		return data, nil, nil
	}
	plain, err := r.keys.decrypt(p, data)
	if err != nil {
		return nil, nil, &RenderError{Path: p, Err: err}
	}
	var docs []document
	if manifestFormat(p) == "json" {
		docs, _ = decodeJSON(data)
	} else {
		docs, _ = decodeYAML(data)
	}
	encLines = make([]int, len(docs))
	for i, d := range docs {
		encLines[i] = d.line
	}
	return plain, encLines, nil
}

// readFile reads any file of the tree (a Helm values file), decrypting it
// when it is SOPS-encrypted YAML or JSON.
func (r *renderer) readFile(p string) ([]byte, error) {
	data, err := fs.ReadFile(r.fsys, p)
	if err != nil {
		return nil, &RenderError{Path: p, Err: fmt.Errorf("read: %w", unwrapPathError(err))}
	}
	if manifestFormat(p) == "" || !isSOPS(p, data) {
		return data, nil
	}
	plain, err := r.keys.decrypt(p, data)
	if err != nil {
		return nil, &RenderError{Path: p, Err: err}
	}
	return plain, nil
}

// decrypt decrypts a SOPS-encrypted YAML or JSON file with the age keys
// and verifies its MAC. Errors say why (no key, no matching key, a MAC
// that does not match) and never hold a value of the file.
func (k ageKeys) decrypt(p string, data []byte) ([]byte, error) {
	quietSOPS.Do(func() { logging.SetLevel(logrus.ErrorLevel) })
	if len(k.ids) == 0 {
		return nil, errors.New("the file is SOPS-encrypted and no age key is given (spec.decryption)")
	}
	type store interface {
		LoadEncryptedFile([]byte) (sops.Tree, error)
		EmitPlainFile(sops.TreeBranches) ([]byte, error)
	}
	var st store = sopsyaml.NewStore(&config.YAMLStoreConfig{})
	if manifestFormat(p) == "json" {
		st = sopsjson.NewStore(&config.JSONStoreConfig{})
	}
	tree, err := st.LoadEncryptedFile(data)
	if err != nil {
		return nil, fmt.Errorf("not a valid SOPS file: %v", err)
	}
	recipients, others := sopsRecipients(tree.Metadata)
	if len(recipients) == 0 {
		return nil, fmt.Errorf("SOPS-encrypted for %s only; driftguard decrypts with age keys", strings.Join(others, ", "))
	}
	svc := keyservice.NewCustomLocalClient(ageKeyService(k))
	dataKey, err := tree.Metadata.GetDataKeyWithKeyServices([]keyservice.KeyServiceClient{svc}, sops.DefaultDecryptionOrder)
	if err != nil {
		return nil, fmt.Errorf("SOPS decryption failed: none of the %s given matches the file's age recipients %s", plural(len(k.ids), "age key"), strings.Join(recipients, ", "))
	}
	cipher := aes.NewCipher()
	mac, err := tree.Decrypt(dataKey, cipher)
	if err != nil {
		return nil, fmt.Errorf("SOPS decryption failed: %v", err)
	}
	stored, err := cipher.Decrypt(tree.Metadata.MessageAuthenticationCode, dataKey, tree.Metadata.LastModified.Format(time.RFC3339))
	if err != nil {
		return nil, fmt.Errorf("SOPS decryption failed: the MAC does not decrypt: %v", err)
	}
	if stored != mac {
		return nil, errors.New("SOPS MAC mismatch: the file was changed after it was encrypted")
	}
	out, err := st.EmitPlainFile(tree.Branches)
	if err != nil {
		return nil, fmt.Errorf("SOPS decryption: write the decrypted file: %v", err)
	}
	return out, nil
}

// sopsRecipients lists the age recipients of a file, and the types of its
// other keys.
func sopsRecipients(m sops.Metadata) (age []string, others []string) {
	seen := map[string]bool{}
	for _, group := range m.KeyGroups {
		for _, key := range group {
			if ak, ok := key.(*sopsage.MasterKey); ok {
				age = append(age, ak.Recipient)
				continue
			}
			if t := key.TypeToIdentifier(); !seen[t] {
				seen[t] = true
				others = append(others, t)
			}
		}
	}
	return age, others
}

// ageKeyService is a SOPS key service that decrypts data keys with the
// age identities it holds, in memory; it never reads SOPS_AGE_KEY or key
// files, and has no other key types.
type ageKeyService struct {
	ids sopsage.ParsedIdentities
}

func (s ageKeyService) Encrypt(context.Context, *keyservice.EncryptRequest) (*keyservice.EncryptResponse, error) {
	return nil, errors.New("encryption is not supported")
}

func (s ageKeyService) Decrypt(_ context.Context, req *keyservice.DecryptRequest) (*keyservice.DecryptResponse, error) {
	ak := req.GetKey().GetAgeKey()
	if ak == nil {
		return nil, errors.New("only age keys are supported")
	}
	if len(s.ids) == 0 {
		return nil, errors.New("no age key")
	}
	mk := &sopsage.MasterKey{Recipient: ak.Recipient, EncryptedKey: string(req.GetCiphertext())}
	s.ids.ApplyToMasterKey(mk)
	plain, err := mk.Decrypt()
	if err != nil {
		return nil, err
	}
	return &keyservice.DecryptResponse{Plaintext: plain}, nil
}

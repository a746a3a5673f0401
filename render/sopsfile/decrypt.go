// Package sopsfile decrypts SOPS-encrypted YAML and JSON files with age
// identities, in memory.
//
// It reads the format the sops CLI writes (github.com/getsops/sops/v3) and
// no more: the data key is an age file, armored, for each recipient of the
// sops metadata; every value is ENC[AES256_GCM,...], encrypted with the
// data key and its path of keys as additional data; the MAC is a SHA-512
// over the plain values in file order, stored encrypted with lastmodified
// as additional data. Only age master keys are read (no KMS, PGP or
// Vault), so the package needs no cloud SDK, reads no environment and no
// file, and runs no program. Decrypted values appear in the output only,
// never in an error.
package sopsfile

import (
	"crypto/subtle"
	"errors"
	"fmt"
	"strings"

	"filippo.io/age"
)

// Format is the format of a SOPS file.
type Format int

const (
	YAML Format = iota
	JSON
)

// ErrModified says the file was changed after it was encrypted: a value
// does not authenticate, or the MAC does not match the values.
var ErrModified = errors.New("the file was modified after it was encrypted")

// ErrMACMismatch is the error of a file whose MAC does not match its
// values; it wraps ErrModified.
var ErrMACMismatch = fmt.Errorf("SOPS MAC mismatch: %w", ErrModified)

// NotAgeError says a file is encrypted for master keys other than age
// only.
type NotAgeError struct {
	KeyTypes []string // pgp, kms, gcp_kms, hckms, azure_kv, hc_vault
}

func (e *NotAgeError) Error() string {
	return fmt.Sprintf("SOPS-encrypted for %s only; driftguard decrypts with age keys", strings.Join(e.KeyTypes, ", "))
}

// Limits bound what decrypting one file may cost; a zero field takes
// DefaultLimits'.
type Limits struct {
	// MaxDepth bounds the nesting of mappings and lists (objects and
	// arrays) of the file.
	MaxDepth int
	// MaxDecodedBytes bounds the text of the file's keys and values,
	// aliases expanded.
	MaxDecodedBytes int64
	// MaxYAMLNodes bounds the nodes the YAML parser makes of the file.
	MaxYAMLNodes int
}

// DefaultLimits are the limits of Decrypt.
var DefaultLimits = Limits{MaxDepth: 100, MaxDecodedBytes: 64 << 20, MaxYAMLNodes: 1_000_000}

// Limit names a limit of Limits.
type Limit int

const (
	LimitDepth Limit = iota + 1
	LimitDecodedBytes
	LimitYAMLNodes
)

// LimitError is a file that goes beyond one of its Limits.
type LimitError struct {
	Limit Limit
	Where string // "line 7"
	Max   int64
}

func (e *LimitError) Error() string {
	switch e.Limit {
	case LimitDepth:
		return fmt.Sprintf("%s: nested deeper than %d levels", e.Where, e.Max)
	case LimitYAMLNodes:
		return fmt.Sprintf("%s: more than %d YAML nodes", e.Where, e.Max)
	}
	return fmt.Sprintf("%s: the file decodes to more than %d bytes of text", e.Where, e.Max)
}

// limits counts what a file costs while it is read.
type limits struct {
	Limits
	depth int
	text  int64
}

// enter opens a mapping or list at line.
func (l *limits) enter(line int) error {
	if l.depth++; l.depth > l.MaxDepth {
		return &LimitError{Limit: LimitDepth, Where: fmt.Sprintf("line %d", line), Max: int64(l.MaxDepth)}
	}
	return nil
}

func (l *limits) leave() { l.depth-- }

// addText counts text decoded at line.
func (l *limits) addText(line, n int) error {
	if l.text += int64(n); l.text > l.MaxDecodedBytes {
		return &LimitError{Limit: LimitDecodedBytes, Where: fmt.Sprintf("line %d", line), Max: l.MaxDecodedBytes}
	}
	return nil
}

// Decrypt decrypts a SOPS-encrypted file with the first of its age
// recipients one of ids opens, verifies its MAC and returns the plain file
// without its sops metadata: YAML documents in their order with their keys
// in order, or the JSON object. Errors say why, naming keys and lines but
// never a value: not a SOPS file, a *NotAgeError, a *NoMatchError,
// ErrModified (a value or the MAC), a *LimitError. DefaultLimits bound it.
func Decrypt(data []byte, format Format, ids []age.Identity) ([]byte, error) {
	return DecryptWithin(data, format, ids, Limits{})
}

// DecryptWithin is Decrypt within lim: a file nested deeper or decoding
// to more text is a *LimitError (wrapped), found before anything is
// decrypted.
func DecryptWithin(data []byte, format Format, ids []age.Identity, lim Limits) ([]byte, error) {
	plain, _, err := DecryptValues(data, format, ids, lim)
	return plain, err
}

// DecryptValues is DecryptWithin that also returns the values that were
// encrypted, as text (a number or a boolean as it is written), in file
// order: what the caller must treat as secret wherever it shows up later
// (package render marks them for redaction). Values that were not encrypted
// (unencrypted_suffix and the like) and comments are not among them.
func DecryptValues(data []byte, format Format, ids []age.Identity, lim Limits) ([]byte, []string, error) {
	type file interface {
		trees() []*branch
		emit() ([]byte, error)
		metadata() any
	}
	if lim.MaxDepth <= 0 {
		lim.MaxDepth = DefaultLimits.MaxDepth
	}
	if lim.MaxDecodedBytes <= 0 {
		lim.MaxDecodedBytes = DefaultLimits.MaxDecodedBytes
	}
	if lim.MaxYAMLNodes <= 0 {
		lim.MaxYAMLNodes = DefaultLimits.MaxYAMLNodes
	}
	l := &limits{Limits: lim}
	var f file
	var err error
	if format == JSON {
		f, err = loadJSON(data, l)
	} else {
		f, err = loadYAML(data, l)
	}
	if err != nil {
		return nil, nil, fmt.Errorf("not a valid SOPS file: %w", err)
	}
	md, err := parseMetadata(f.metadata())
	var unsupported unsupportedError
	if errors.As(err, &unsupported) {
		return nil, nil, err
	}
	if err != nil {
		return nil, nil, fmt.Errorf("not a valid SOPS file: %w", err)
	}
	if len(md.ageKeys) == 0 {
		if len(md.otherKeyTypes) == 0 {
			return nil, nil, errors.New("not a valid SOPS file: sops metadata has no keys")
		}
		return nil, nil, &NotAgeError{KeyTypes: md.otherKeyTypes}
	}
	key, err := dataKey(md, ids)
	if err != nil {
		return nil, nil, err
	}
	c, err := newDataCipher(key)
	if err != nil {
		return nil, nil, fmt.Errorf("SOPS decryption failed: %w", err)
	}
	w := newWalker(c, md)
	for _, b := range f.trees() {
		if err := w.branch(b, nil, nil); err != nil {
			return nil, nil, fmt.Errorf("SOPS decryption failed: %w", err)
		}
	}
	stored, err := c.decrypt(md.mac, md.lastModified)
	if errors.Is(err, errAuth) {
		return nil, nil, fmt.Errorf("SOPS decryption failed: the MAC does not decrypt: %w", ErrModified)
	}
	if err != nil {
		return nil, nil, fmt.Errorf("SOPS decryption failed: the MAC does not decrypt: %w", err)
	}
	if s, ok := stored.(string); !ok || subtle.ConstantTimeCompare([]byte(s), []byte(w.sum())) != 1 {
		return nil, nil, ErrMACMismatch
	}
	plain, err := f.emit()
	if err != nil {
		return nil, nil, err
	}
	return plain, w.plain, nil
}

func (f *yamlFile) trees() []*branch { return f.branches }
func (f *yamlFile) metadata() any    { return f.meta }
func (f *jsonFile) trees() []*branch { return []*branch{f.tree} }
func (f *jsonFile) metadata() any    { return f.meta }

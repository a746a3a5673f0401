package render

import (
	"bytes"
	"errors"
	"fmt"
	"regexp"

	"filippo.io/age"

	"github.com/driftguard/driftguard/redact"
	"github.com/driftguard/driftguard/render/sopsfile"
)

// ageKeys are the parsed age identities of one render.
type ageKeys struct {
	ids []age.Identity
	// sensitive collects the values decrypted with the keys (and the keys
	// themselves), when set.
	sensitive *redact.Sensitive
}

// CheckAgeKey reports whether s holds one or more age identities
// (AGE-SECRET-KEY-1..., as age-keygen writes them, comments allowed). The
// error never repeats the text.
func CheckAgeKey(s string) error {
	if _, err := sopsfile.ParseIdentities(s); err != nil {
		return fmt.Errorf("not an age identity (AGE-SECRET-KEY-1...): %w", err)
	}
	return nil
}

func parseAgeKeys(keys []string) (ageKeys, error) {
	var out ageKeys
	for i, k := range keys {
		ids, err := sopsfile.ParseIdentities(k)
		if err != nil {
			return ageKeys{}, fmt.Errorf("age key %d: not an age identity (AGE-SECRET-KEY-1...): %w", i+1, err)
		}
		out.ids = append(out.ids, ids...)
	}
	return out, nil
}

var (
	sopsYAMLKey = regexp.MustCompile(`(?m)^sops:[ \t]*(#.*)?\r?$`)
	sopsJSONKey = regexp.MustCompile(`"sops"\s*:\s*\{`)
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
	data, err = r.read(p)
	if err != nil {
		return nil, nil, err
	}
	if !isSOPS(p, data) {
		return data, nil, nil
	}
	plain, err := r.keys.decrypt(p, data, r.lim)
	if err != nil {
		return nil, nil, &RenderError{Path: p, Err: err}
	}
	docs, _ := r.decode(p, data)
	encLines = make([]int, len(docs))
	for i, d := range docs {
		encLines[i] = d.line
	}
	return plain, encLines, nil
}

// readFile reads any file of the tree (a Helm values file), decrypting it
// when it is SOPS-encrypted YAML or JSON.
func (r *renderer) readFile(p string) ([]byte, error) {
	data, err := r.read(p)
	if err != nil {
		return nil, err
	}
	if manifestFormat(p) == "" || !isSOPS(p, data) {
		return data, nil
	}
	plain, err := r.keys.decrypt(p, data, r.lim)
	if err != nil {
		return nil, &RenderError{Path: p, Err: err}
	}
	return plain, nil
}

// decrypt decrypts a SOPS-encrypted YAML or JSON file with the age keys
// and verifies its MAC (package sopsfile). Errors say why (no key, no
// matching key, a MAC that does not match) and never hold a value of the
// file.
func (k ageKeys) decrypt(p string, data []byte, lim Limits) ([]byte, error) {
	if len(k.ids) == 0 {
		return nil, errors.New("the file is SOPS-encrypted and no age key is given (spec.decryption)")
	}
	format := sopsfile.YAML
	if manifestFormat(p) == "json" {
		format = sopsfile.JSON
	}
	plain, values, err := sopsfile.DecryptValues(data, format, k.ids, sopsfile.Limits{MaxDepth: lim.MaxDepth, MaxDecodedBytes: lim.MaxDecodedBytes, MaxYAMLNodes: lim.MaxYAMLNodes})
	for _, v := range values {
		k.sensitive.Add(v) // secret wherever it shows up: records, messages, status
	}
	var le *sopsfile.LimitError
	if errors.As(err, &le) {
		switch le.Limit {
		case sopsfile.LimitDepth:
			return nil, fmt.Errorf("%s: %w", le.Where, depthError(lim.MaxDepth))
		case sopsfile.LimitDecodedBytes:
			return nil, fmt.Errorf("%s: %w", le.Where, decodedError(lim.MaxDecodedBytes))
		case sopsfile.LimitYAMLNodes:
			return nil, fmt.Errorf("%s: %w", le.Where, nodesError(lim.MaxYAMLNodes))
		}
	}
	return plain, err
}

package sopsfile

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"strings"

	"filippo.io/age"
	"filippo.io/age/armor"
)

// ParseIdentities parses age identities, one a line, as age-keygen writes
// them: X25519 (AGE-SECRET-KEY-1...) and post-quantum hybrid
// (AGE-SECRET-KEY-PQ-1...) keys; blank lines and lines starting with # are
// skipped. Plugin identities (AGE-PLUGIN-...) are refused: they would run a
// program. Errors give the line, never its text.
func ParseIdentities(s string) ([]age.Identity, error) {
	var ids []age.Identity
	sc := bufio.NewScanner(strings.NewReader(s))
	sc.Buffer(make([]byte, 0, 4096), 1<<20)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		var (
			id  age.Identity
			err error
		)
		switch {
		case strings.HasPrefix(line, "AGE-PLUGIN-"):
			return nil, fmt.Errorf("line %d: age plugin identities (AGE-PLUGIN-...) are not supported", n)
		case strings.HasPrefix(line, "AGE-SECRET-KEY-PQ-1"):
			id, err = age.ParseHybridIdentity(line)
		default:
			id, err = age.ParseX25519Identity(line)
		}
		if err != nil {
			return nil, fmt.Errorf("line %d does not parse", n)
		}
		ids = append(ids, id)
	}
	if err := sc.Err(); err != nil {
		return nil, errors.New("a line is too long for an age identity")
	}
	if len(ids) == 0 {
		return nil, errors.New("no identity in the text")
	}
	return ids, nil
}

// NoMatchError says none of the given identities decrypts the data key of
// a file.
type NoMatchError struct {
	Keys       int      // how many identities were given
	Recipients []string // the file's age recipients
}

func (e *NoMatchError) Error() string {
	keys := fmt.Sprintf("%d age keys", e.Keys)
	if e.Keys == 1 {
		keys = "1 age key"
	}
	return fmt.Sprintf("SOPS decryption failed: none of the %s given matches the file's age recipients %s", keys, strings.Join(e.Recipients, ", "))
}

// maxDataKey bounds what an age file may decrypt to; a data key has 32
// bytes.
const maxDataKey = 1024

// dataKey decrypts the file's data key with the first age recipient one of
// the identities opens.
func dataKey(md metadata, ids []age.Identity) ([]byte, error) {
	recipients := make([]string, len(md.ageKeys))
	for i, k := range md.ageKeys {
		recipients[i] = k.recipient
		r, err := age.Decrypt(armor.NewReader(strings.NewReader(k.enc)), ids...)
		if err != nil {
			continue
		}
		key, err := io.ReadAll(io.LimitReader(r, maxDataKey))
		if err != nil {
			continue
		}
		return key, nil
	}
	return nil, &NoMatchError{Keys: len(ids), Recipients: recipients}
}

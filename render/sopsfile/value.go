package sopsfile

import (
	"crypto/aes"
	"crypto/cipher"
	"encoding/base64"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// An encrypted value as sops writes it:
//
//	ENC[AES256_GCM,data:BASE64,iv:BASE64,tag:BASE64,type:TYPE]
//
// data is the AES-GCM ciphertext without its 16-byte tag, iv the nonce
// (32 bytes when sops wrote it), type the type of the plain value.
type encValue struct {
	data, iv, tag []byte
	typ           string
}

const (
	encPrefix = "ENC[AES256_GCM,"
	tagSize   = 16
)

// valueTypes are the types sops records in type:.
var valueTypes = map[string]bool{"str": true, "int": true, "float": true, "bool": true, "bytes": true, "time": true, "comment": true}

// errNotEncrypted says a value is not of the ENC[...] form at all.
var errNotEncrypted = errors.New("not an encrypted value (ENC[AES256_GCM,...])")

// parseValue parses an ENC[...] value. Errors never repeat the value.
func parseValue(s string) (encValue, error) {
	if !strings.HasPrefix(s, "ENC[") {
		return encValue{}, errNotEncrypted
	}
	if !strings.HasPrefix(s, encPrefix) {
		return encValue{}, errors.New("encrypted with an unknown cipher (only AES256_GCM)")
	}
	if !strings.HasSuffix(s, "]") {
		return encValue{}, errors.New("the encrypted value does not end with ]")
	}
	fields := strings.Split(s[len(encPrefix):len(s)-1], ",")
	names := [...]string{"data", "iv", "tag", "type"}
	if len(fields) != len(names) {
		return encValue{}, fmt.Errorf("the encrypted value has %d fields, want data, iv, tag and type", len(fields))
	}
	var raw [len(names)][]byte
	for i, f := range fields {
		name, val, ok := strings.Cut(f, ":")
		if !ok || name != names[i] {
			return encValue{}, fmt.Errorf("field %d of the encrypted value is not %q", i+1, names[i]+":")
		}
		if i == 3 {
			if !valueTypes[val] {
				return encValue{}, errors.New("unknown type in the encrypted value")
			}
			break
		}
		b, err := base64.StdEncoding.DecodeString(val)
		if err != nil {
			return encValue{}, fmt.Errorf("%s of the encrypted value is not base64", name)
		}
		raw[i] = b
	}
	v := encValue{data: raw[0], iv: raw[1], tag: raw[2], typ: fields[3][len("type:"):]}
	if len(v.iv) == 0 {
		return encValue{}, errors.New("the encrypted value has an empty iv")
	}
	if len(v.tag) != tagSize {
		return encValue{}, fmt.Errorf("the tag of the encrypted value has %d bytes, want %d", len(v.tag), tagSize)
	}
	return v, nil
}

// String formats v as sops writes it.
func (v encValue) String() string {
	b64 := base64.StdEncoding.EncodeToString
	return encPrefix + "data:" + b64(v.data) + ",iv:" + b64(v.iv) + ",tag:" + b64(v.tag) + ",type:" + v.typ + "]"
}

// open decrypts v with the data key's block cipher; ad is the additional
// data sops authenticates with it (the value's path).
func (v encValue) open(block cipher.Block, ad string) ([]byte, error) {
	gcm, err := cipher.NewGCMWithNonceSize(block, len(v.iv))
	if err != nil {
		return nil, err
	}
	ct := make([]byte, 0, len(v.data)+len(v.tag))
	ct = append(append(ct, v.data...), v.tag...)
	return gcm.Open(nil, v.iv, ct, []byte(ad))
}

// comment is a decrypted YAML comment (type:comment).
type comment string

// typed turns the plain bytes of a value into the Go value of its sops
// type, as sops' cipher does: string, int, float64, bool, []byte,
// time.Time or comment.
func typed(typ string, b []byte) (any, error) {
	s := string(b)
	switch typ {
	case "str":
		return s, nil
	case "int":
		i, err := strconv.Atoi(s)
		if err != nil {
			return nil, errors.New("an int value is not a number")
		}
		return i, nil
	case "float":
		f, err := strconv.ParseFloat(s, 64)
		if err != nil {
			return nil, errors.New("a float value is not a number")
		}
		return f, nil
	case "bool":
		v, err := strconv.ParseBool(s)
		if err != nil {
			return nil, errors.New("a bool value is not true or false")
		}
		return v, nil
	case "bytes":
		return b, nil
	case "time":
		var t time.Time
		if err := t.UnmarshalText(b); err != nil {
			return nil, errors.New("a time value is not an RFC 3339 time")
		}
		return t, nil
	case "comment":
		return comment(s), nil
	}
	return nil, errors.New("unknown type in the encrypted value")
}

// dataCipher decrypts the values of one file with its data key.
type dataCipher struct {
	block cipher.Block
}

func newDataCipher(key []byte) (dataCipher, error) {
	block, err := aes.NewCipher(key)
	if err != nil {
		return dataCipher{}, fmt.Errorf("the data key has %d bytes, not an AES key", len(key))
	}
	return dataCipher{block: block}, nil
}

// errAuth says a value's ciphertext, tag or path does not authenticate.
var errAuth = errors.New("the value does not authenticate")

// decrypt decrypts a value as sops does: an empty string stays empty,
// anything else must be ENC[...] and authenticate with ad.
func (c dataCipher) decrypt(s, ad string) (any, error) {
	if s == "" {
		return "", nil
	}
	v, err := parseValue(s)
	if err != nil {
		return nil, err
	}
	plain, err := v.open(c.block, ad)
	if err != nil {
		return nil, errAuth
	}
	return typed(v.typ, plain)
}

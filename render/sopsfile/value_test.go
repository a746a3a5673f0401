package sopsfile

import (
	"bytes"
	"crypto/aes"
	"crypto/cipher"
	"strings"
	"testing"
)

// sealValue encrypts plain as sops does, for tests of the value format.
func sealValue(t testing.TB, key []byte, plain, typ, ad string) string {
	t.Helper()
	block, err := aes.NewCipher(key)
	if err != nil {
		t.Fatal(err)
	}
	gcm, err := cipher.NewGCMWithNonceSize(block, 32)
	if err != nil {
		t.Fatal(err)
	}
	iv := bytes.Repeat([]byte{7}, 32)
	out := gcm.Seal(nil, iv, []byte(plain), []byte(ad))
	return encValue{data: out[:len(out)-tagSize], iv: iv, tag: out[len(out)-tagSize:], typ: typ}.String()
}

var testKey = bytes.Repeat([]byte{0x42}, 32)

func TestDecryptValue(t *testing.T) {
	c, err := newDataCipher(testKey)
	if err != nil {
		t.Fatal(err)
	}
	valid := sealValue(t, testKey, "hunter2", "str", "a:b:")
	tests := []struct {
		name    string
		value   string
		ad      string
		want    any
		wantErr string
	}{
		{"string", valid, "a:b:", "hunter2", ""},
		{"int", sealValue(t, testKey, "-42", "int", "n:"), "n:", -42, ""},
		{"float", sealValue(t, testKey, "1.5", "float", "f:"), "f:", 1.5, ""},
		{"bool as sops writes it", sealValue(t, testKey, "True", "bool", "b:"), "b:", true, ""},
		{"comment", sealValue(t, testKey, " a comment", "comment", ":"), ":", comment(" a comment"), ""},
		{"empty stays empty", "", "x:", "", ""},
		{"another path", valid, "a:c:", nil, "does not authenticate"},
		{"not encrypted", "hunter2", "a:b:", nil, "not an encrypted value"},
		{"another cipher", "ENC[AES128_CBC,data:AA==,iv:AA==,tag:AA==,type:str]", "", nil, "unknown cipher"},
		{"no closing bracket", strings.TrimSuffix(valid, "]"), "a:b:", nil, "does not end with ]"},
		{"fields out of order", "ENC[AES256_GCM,iv:AA==,data:AA==,tag:AA==,type:str]", "", nil, `field 1 of the encrypted value is not "data:"`},
		{"missing type", "ENC[AES256_GCM,data:AA==,iv:AA==,tag:AA==]", "", nil, "has 3 fields"},
		{"bad base64", "ENC[AES256_GCM,data:!!,iv:AA==,tag:AA==,type:str]", "", nil, "data of the encrypted value is not base64"},
		{"short tag", "ENC[AES256_GCM,data:AA==,iv:AAAA,tag:AA==,type:str]", "", nil, "the tag of the encrypted value has 1 bytes, want 16"},
		{"empty iv", "ENC[AES256_GCM,data:AA==,iv:,tag:AAAAAAAAAAAAAAAAAAAAAA==,type:str]", "", nil, "empty iv"},
		{"unknown type", strings.Replace(valid, "type:str", "type:map", 1), "a:b:", nil, "unknown type"},
		{"int that is not", sealValue(t, testKey, "4x", "int", "n:"), "n:", nil, "not a number"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := c.decrypt(tt.value, tt.ad)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want %q", err, tt.wantErr)
				}
				if strings.Contains(err.Error(), "hunter2") || strings.Contains(err.Error(), "4x") {
					t.Errorf("the error shows the value: %v", err)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("got %#v, %v; want %#v", got, err, tt.want)
			}
		})
	}
}

// FuzzParseValue: the parser of ENC[...] values never panics, a value it
// accepts formats back to one that parses the same, and decrypting it
// fails cleanly or gives a value of its type.
func FuzzParseValue(f *testing.F) {
	f.Add(sealValue(f, testKey, "hunter2", "str", "a:"))
	f.Add(sealValue(f, testKey, "12", "int", "a:"))
	f.Add("ENC[AES256_GCM,data:,iv:AA==,tag:AAAAAAAAAAAAAAAAAAAAAA==,type:comment]")
	f.Add("ENC[AES256_GCM,data:AA==,iv:AA==,tag:AA==,type:str]")
	f.Add("ENC[AES256_GCM,data:a,b,iv:,tag:,type:]")
	f.Add("ENC[]")
	f.Add("")
	c, err := newDataCipher(testKey)
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, s string) {
		v, err := parseValue(s)
		if err != nil {
			// Longer than any message the parser writes, so that a value
			// that is a piece of a message ("S256_GCM," of "ENC[AES256_GCM,
			// ...]", testdata/fuzz) is no finding; a value repeated whole
			// is one.
			if strings.Contains(err.Error(), s) && len(s) > 80 {
				t.Fatalf("the error repeats the value: %v", err)
			}
			return
		}
		again, err := parseValue(v.String())
		if err != nil {
			t.Fatalf("%q parses, its formatted form %q does not: %v", s, v.String(), err)
		}
		if !bytes.Equal(again.data, v.data) || !bytes.Equal(again.iv, v.iv) || !bytes.Equal(again.tag, v.tag) || again.typ != v.typ {
			t.Fatalf("%q: formatted and parsed again differs", s)
		}
		if plain, err := c.decrypt(s, "a:"); err == nil {
			if _, err := macBytes(plain); err != nil {
				t.Fatalf("decrypted to %T, which the MAC cannot hash", plain)
			}
		}
	})
}

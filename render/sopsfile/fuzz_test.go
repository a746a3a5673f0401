package sopsfile

import (
	"errors"
	"testing"

	"github.com/driftguard/driftguard/render/sopstest"
)

// FuzzDecryptWithin decrypts, within small limits, files the fuzzer
// derives from real SOPS files (YAML with anchors and comments, JSON,
// several encryption rules, encrypted for a key it holds) and from deeply
// nested ones: nothing may panic, and a limit error names its limit.
// (FuzzDecrypt in decrypt_test.go checks that errors show no value.)
//
//	go test -run='^$' -fuzz=FuzzDecryptWithin -fuzztime=20s ./render/sopsfile/
func FuzzDecryptWithin(f *testing.F) {
	key, err := sopstest.NewKey()
	if err != nil {
		f.Fatal(err)
	}
	ids, err := ParseIdentities(key.Identity)
	if err != nil {
		f.Fatal(err)
	}
	seeds := []struct {
		plain string
		json  bool
		o     sopstest.Options
	}{
		{"apiVersion: v1\nkind: Secret\nmetadata:\n  name: db\nstringData:\n  password: hunter2 # the password\n  list: [a, 1, true, 2.5]\n", false, sopstest.Options{EncryptedRegex: "^(data|stringData)$"}},
		{"a: &a {x: 1}\nb: *a\n---\nc: [x, y]\n", false, sopstest.Options{}},
		{"# head\nkey: value\nlist:\n  # a comment in a list\n  - 1\n", false, sopstest.Options{UnencryptedSuffix: "_unencrypted"}},
		{`{"a": {"b": [1, "x", null, true]}, "c": 1.5}`, true, sopstest.Options{}},
		{`{"a": "x", "b": {"c": "y"}}`, true, sopstest.Options{MACOnlyEncrypted: true, EncryptedRegex: "^b$"}},
	}
	for _, s := range seeds {
		s.o.JSON = s.json
		enc, err := sopstest.Encrypt([]byte(s.plain), s.o, key.Recipient)
		if err != nil {
			f.Fatalf("encrypt: %v", err)
		}
		f.Add(enc, s.json)
	}
	f.Add([]byte("a: [[[[[[[[[[[[[[[[[[[[[[[[]]]]]]]]]]]]]]]]]]]]]]]]\nsops: {mac: ENC[x]}\n"), false)
	f.Add([]byte(`{"a": [[[[[[[[[[[[[[[[[[[[[[[]]]]]]]]]]]]]]]]]]]]]]], "sops": {"mac": "ENC[x]"}}`), true)
	lim := Limits{MaxDepth: 20, MaxDecodedBytes: 1 << 16}
	f.Fuzz(func(t *testing.T, data []byte, json bool) {
		format := YAML
		if json {
			format = JSON
		}
		plain, err := DecryptWithin(data, format, ids, lim)
		var le *LimitError
		if errors.As(err, &le) && le.Max <= 0 {
			t.Fatalf("limit error without a limit: %v", err)
		}
		if err == nil && plain == nil {
			t.Fatal("no error and no output")
		}
	})
}

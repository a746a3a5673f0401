package sopsfile

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"regexp"
	"slices"
	"strings"
	"testing"

	"filippo.io/age"
	"go.yaml.in/yaml/v3"

	"github.com/driftguard/driftguard/render/sopstest"
)

func newKey(t *testing.T) sopstest.Key {
	t.Helper()
	k, err := sopstest.NewKey()
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func identities(t *testing.T, keys ...string) []age.Identity {
	t.Helper()
	var ids []age.Identity
	for _, k := range keys {
		got, err := ParseIdentities(k)
		if err != nil {
			t.Fatalf("ParseIdentities: %v", err)
		}
		ids = append(ids, got...)
	}
	return ids
}

func encrypt(t *testing.T, plain string, o sopstest.Options, recipients ...string) []byte {
	t.Helper()
	out, err := sopstest.Encrypt([]byte(plain), o, recipients...)
	if err != nil {
		t.Fatalf("encrypt: %v", err)
	}
	return out
}

// TestDecrypt encrypts files with the sops library as the sops CLI does,
// decrypts them with Decrypt and checks the result holds the values of the
// plain file, in its order, with their types, and what sops' own
// decryption gives.
func TestDecrypt(t *testing.T) {
	key, other := newKey(t), newKey(t)
	hybrid, err := age.GenerateHybridIdentity()
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name       string
		plain      string
		opts       sopstest.Options
		recipients []string // default: key
		ids        []string // default: key
		plainIn    []string // texts the encrypted file shows in plain
		hiddenIn   []string // texts the encrypted file must not show
		comments   bool     // compare the YAML comments too
	}{
		{name: "nested maps", plain: `app:
  db:
    user: admin
    password: hunter2-db
  cache:
    url: redis://cache:6379/0
    tls:
      ca: "-----BEGIN CERTIFICATE-----"
`, hiddenIn: []string{"hunter2", "redis://", "admin"}},
		{name: "lists of maps", plain: `users:
  - name: alice
    token: t0ken-alice
  - name: bob
    roles: [admin, dev]
    keys:
      - id: 1
        secret: s3cret-bob
matrix:
  - - a
    - b
  - []
  - {}
`, hiddenIn: []string{"t0ken-alice", "s3cret-bob", "alice"}},
		{name: "ints, floats, bools and nulls", plain: `n: 42
neg: -7
zero: 0
big: 9007199254740993
hex: 0x1F
f: 1.5
whole: 3.0
exp: 1.0e+3
small: -0.000125
t: true
f2: false
nothing: null
tilde: ~
quoted: "8080"
quotedbool: "true"
empty: ""
date: 2024-01-02
`, hiddenIn: []string{"9007199254740993", "0.000125"}},
		{name: "multi-line and unusual strings", plain: `script: |
  #!/bin/sh
  echo "hunter2 in a script"
  exit 0
folded: >
  one
  two
keep: |+
  trailing

spaces: "  padded  "
unicode: "päss wörd ✓ 密码"
colon: "a: b, c"
brackets: "ENC[not really]"
long: "` + strings.Repeat("word  and   more words ", 20) + `"
b64: ` + strings.Repeat("aHVudGVyMg", 60) + `
`, hiddenIn: []string{"hunter2", "padded", "päss"}},
		{name: "comments are decrypted and lists keep their elements", plain: `# top comment
a: 1 # inline
list:
  # head of first
  - x
  - y # inline y
  # foot
b:
  # about c
  c: value
`, hiddenIn: []string{"top comment", "head of first"}, comments: true},
		{name: "unencrypted_suffix", plain: `name_plain: visible-name
secret: hidden-secret
nested_plain:
  deep: visible-deep
  list: [visible-elem]
other:
  deep: hidden-deep
`, opts: sopstest.Options{UnencryptedSuffix: "_plain"}, plainIn: []string{"visible-name", "visible-deep", "visible-elem"}, hiddenIn: []string{"hidden-secret", "hidden-deep"}},
		{name: "default _unencrypted suffix", plain: `host_unencrypted: db.shop.svc
password: hunter2-default
`, plainIn: []string{"db.shop.svc"}, hiddenIn: []string{"hunter2"}},
		{name: "encrypted_regex, a Kubernetes Secret", plain: `apiVersion: v1
kind: Secret
metadata:
  name: db
  namespace: shop
  labels:
    app: shop
type: Opaque
data:
  password: aHVudGVyMg==
stringData:
  user: admin-user
  config.yaml: |
    url: postgres://admin:hunter2@db/shop
`, opts: sopstest.Options{EncryptedRegex: "^(data|stringData)$"}, plainIn: []string{"namespace: shop", "app: shop", "type: Opaque"}, hiddenIn: []string{"aHVudGVyMg", "admin-user", "postgres://"}},
		{name: "encrypted_suffix", plain: `user: visible-user
password_secret: hidden-pass
tls_secret:
  key: hidden-key
`, opts: sopstest.Options{EncryptedSuffix: "_secret"}, plainIn: []string{"visible-user"}, hiddenIn: []string{"hidden-pass", "hidden-key"}},
		{name: "unencrypted_regex", plain: `metadata:
  name: visible-name
spec:
  token: hidden-token
`, opts: sopstest.Options{UnencryptedRegex: "^metadata$"}, plainIn: []string{"visible-name"}, hiddenIn: []string{"hidden-token"}},
		{name: "mac_only_encrypted", plain: `kind: Secret
stringData:
  password: hunter2-maconly
`, opts: sopstest.Options{EncryptedRegex: "^stringData$", MACOnlyEncrypted: true}, plainIn: []string{"kind: Secret"}, hiddenIn: []string{"hunter2"}},
		{name: "encrypted_comment_regex", plain: `# sops:enc
password: hunter2-comment
user: visible-user
`, opts: sopstest.Options{EncryptedCommentRegex: "sops:enc"}, plainIn: []string{"visible-user", "sops:enc"}, hiddenIn: []string{"hunter2"}},
		{name: "unencrypted_comment_regex", plain: `# sops:plain
user: visible-user
password: hunter2-comment
`, opts: sopstest.Options{UnencryptedCommentRegex: "sops:plain"}, plainIn: []string{"visible-user"}, hiddenIn: []string{"hunter2"}},
		{name: "several documents", plain: `kind: Secret
metadata: {name: one}
stringData: {password: hunter2-one}
---
# the second
kind: Secret
metadata: {name: two}
stringData: {password: hunter2-two}
`, opts: sopstest.Options{EncryptedRegex: "^stringData$"}, plainIn: []string{"name: two"}, hiddenIn: []string{"hunter2"}},
		{name: "two recipients, the second is ours", plain: "password: hunter2-second\n", recipients: []string{other.Recipient, key.Recipient}, hiddenIn: []string{"hunter2"}},
		{name: "two identities, the second opens", plain: "password: hunter2-ids\n", ids: []string{other.Identity, key.Identity}},
		{name: "post-quantum hybrid key", plain: "password: hunter2-pq\n", recipients: []string{hybrid.Recipient().String()}, ids: []string{hybrid.String()}},
		{name: "JSON", plain: `{"apiVersion": "v1", "kind": "Secret",
 "metadata": {"name": "api", "labels": {"a": "b"}},
 "stringData": {"token": "t0ken-json", "multi": "line1\nline2"},
 "numbers": [1, -2, 2.5, 9007199254740993, 1e3, 0],
 "flags": [true, false, null],
 "objects": [{"k": "v1"}, {"k": "v2", "nested": {"deep": "hunter2-json"}}],
 "empty": "", "unicode": "päss ✓"}`, opts: sopstest.Options{JSON: true}, hiddenIn: []string{"t0ken-json", "hunter2", "päss"}},
		{name: "JSON, encrypted_regex", plain: `{"kind": "Secret", "metadata": {"name": "api"}, "stringData": {"token": "t0ken-json"}}`,
			opts: sopstest.Options{JSON: true, EncryptedRegex: "^stringData$"}, plainIn: []string{`"name": "api"`}, hiddenIn: []string{"t0ken-json"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			recipients, ids := tt.recipients, tt.ids
			if recipients == nil {
				recipients = []string{key.Recipient}
			}
			if ids == nil {
				ids = []string{key.Identity}
			}
			enc := encrypt(t, tt.plain, tt.opts, recipients...)
			for _, s := range tt.plainIn {
				if !bytes.Contains(enc, []byte(s)) {
					t.Errorf("fixture: the encrypted file does not show %q in plain:\n%s", s, enc)
				}
			}
			for _, s := range tt.hiddenIn {
				if bytes.Contains(enc, []byte(s)) {
					t.Errorf("fixture: the encrypted file shows %q:\n%s", s, enc)
				}
			}
			format := YAML
			if tt.opts.JSON {
				format = JSON
			}
			got, err := Decrypt(enc, format, identities(t, ids...))
			if err != nil {
				t.Fatalf("Decrypt: %v\n%s", err, enc)
			}
			want, err := sopstest.Decrypt(enc, tt.opts.JSON, ids...)
			if err != nil {
				t.Fatalf("sops' own decryption: %v", err)
			}
			if g, w := flatten(t, got), flatten(t, []byte(tt.plain)); !slices.Equal(g, w) {
				t.Errorf("decrypted values differ from the plain file:\n got %q\nwant %q\ndecrypted:\n%s", g, w, got)
			}
			if g, w := flatten(t, got), flatten(t, want); !slices.Equal(g, w) {
				t.Errorf("decrypted values differ from sops' own decryption:\n got %q\nwant %q", g, w)
			}
			if bytes.Contains(got, []byte("ENC[AES256_GCM")) || regexp.MustCompile(`(?m)^sops:`).Match(got) || bytes.Contains(got, []byte(`"sops"`)) {
				t.Errorf("the output keeps encrypted values or the metadata:\n%s", got)
			}
			if tt.comments {
				if g, w := comments(t, got), comments(t, []byte(tt.plain)); !slices.Equal(g, w) {
					t.Errorf("comments = %q, want %q", g, w)
				}
			}
		})
	}
}

// flatten lists the scalars of a YAML (or JSON) stream in document order
// as path=kind:value, numbers as float64, so that int 3 and 3.0 compare
// equal as they do once in Kubernetes.
func flatten(t *testing.T, data []byte) []string {
	t.Helper()
	var out []string
	var walk func(n *yaml.Node, path string)
	walk = func(n *yaml.Node, path string) {
		switch n.Kind {
		case yaml.DocumentNode:
			for _, c := range n.Content {
				walk(c, path)
			}
		case yaml.AliasNode:
			walk(n.Alias, path)
		case yaml.MappingNode:
			if len(n.Content) == 0 {
				out = append(out, path+"={}")
			}
			for i := 0; i+1 < len(n.Content); i += 2 {
				walk(n.Content[i+1], path+"."+n.Content[i].Value)
			}
		case yaml.SequenceNode:
			if len(n.Content) == 0 {
				out = append(out, path+"=[]")
			}
			for i, c := range n.Content {
				walk(c, fmt.Sprintf("%s[%d]", path, i))
			}
		case yaml.ScalarNode:
			var v any
			if err := n.Decode(&v); err != nil {
				t.Fatalf("decode %s: %v", path, err)
			}
			switch x := v.(type) {
			case int:
				v = float64(x)
			case uint64:
				v = float64(x)
			}
			out = append(out, fmt.Sprintf("%s=%T:%v", path, v, v))
		}
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	for i := 0; ; i++ {
		var doc yaml.Node
		if err := dec.Decode(&doc); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatalf("parse:\n%s\n%v", data, err)
		}
		walk(&doc, fmt.Sprintf("doc%d", i))
	}
	return out
}

// comments lists the comment lines of a YAML stream, sorted.
func comments(t *testing.T, data []byte) []string {
	t.Helper()
	var out []string
	var walk func(n *yaml.Node)
	walk = func(n *yaml.Node) {
		for _, c := range []string{n.HeadComment, n.LineComment, n.FootComment} {
			for _, l := range strings.Split(c, "\n") {
				if l = strings.TrimSpace(l); l != "" {
					out = append(out, l)
				}
			}
		}
		for _, c := range n.Content {
			walk(c)
		}
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	for {
		var doc yaml.Node
		if err := dec.Decode(&doc); err != nil {
			break
		}
		walk(&doc)
	}
	slices.Sort(out)
	return out
}

const plainSecret = `apiVersion: v1
kind: Secret
metadata:
  name: db
  namespace: shop
stringData:
  password: hunter2-very-secret
  user: admin-very-secret
`

// TestDecryptErrors: files changed after encryption, keys that do not
// match, metadata sops would refuse. No error shows a value.
func TestDecryptErrors(t *testing.T) {
	key, other := newKey(t), newKey(t)
	k8s := sopstest.Options{EncryptedRegex: "^(data|stringData)$"}
	secret := string(encrypt(t, plainSecret, k8s, key.Recipient))
	all := string(encrypt(t, plainSecret, sopstest.Options{}, key.Recipient))
	jsonSecret := string(encrypt(t, `{"kind": "Secret", "stringData": {"password": "hunter2-json"}}`, sopstest.Options{JSON: true, EncryptedRegex: "^stringData$"}, key.Recipient))
	macOnly := string(encrypt(t, plainSecret, sopstest.Options{EncryptedRegex: "^stringData$", MACOnlyEncrypted: true}, key.Recipient))

	valueOf := func(s, k string) string { // the ENC[...] of key k
		i := strings.Index(s, " "+k+": ENC[")
		if i < 0 {
			t.Fatalf("fixture has no encrypted %s", k)
		}
		rest := s[i+len(k)+3:]
		return rest[:strings.IndexByte(rest, '\n')]
	}
	pw, user := valueOf(secret, "password"), valueOf(secret, "user")
	flip := func(v string) string { // change one byte of the ciphertext
		i := strings.Index(v, "data:") + len("data:")
		c := byte('A')
		if v[i] == 'A' {
			c = 'B'
		}
		return v[:i] + string(c) + v[i+1:]
	}
	metaAge := regexpReplace(t, secret, "\n    age:\n", "\n    pgp:\n")
	twoGroups := strings.Replace(secret, "sops:\n    age:\n", "sops:\n    key_groups:\n        - age: []\n        - age: []\n    unused_age:\n", 1)

	tests := []struct {
		name   string
		data   string
		json   bool
		ids    []string
		want   string
		wantIs error
	}{
		{name: "no key matches", data: secret, ids: []string{other.Identity}, want: "SOPS decryption failed: none of the 1 age key given matches the file's age recipients " + key.Recipient},
		{name: "no key of two matches", data: secret, ids: []string{other.Identity, other.Identity}, want: "none of the 2 age keys given matches"},
		{name: "a plain value changed", data: strings.Replace(secret, "namespace: shop", "namespace: prod", 1), want: "SOPS MAC mismatch: the file was modified after it was encrypted", wantIs: ErrMACMismatch},
		{name: "an encrypted value changed", data: strings.Replace(secret, pw, flip(pw), 1), want: "the value of stringData.password (line 7) does not decrypt: the file was modified after it was encrypted", wantIs: ErrModified},
		{name: "encrypted values swapped between keys", data: strings.NewReplacer(pw, user, user, pw).Replace(secret), want: "the value of stringData.password (line 7) does not decrypt", wantIs: ErrModified},
		{name: "an encrypted value removed", data: strings.Replace(secret, " user: "+user+"\n", "\n", 1), want: "SOPS MAC mismatch", wantIs: ErrMACMismatch},
		{name: "a value added in plain where values are encrypted", data: strings.Replace(secret, "    user: ", "    extra: plain-text\n    user: ", 1), want: "the value of stringData.extra (line 8) is not encrypted, though the file's rules say it should be"},
		{name: "a value that is not a string where values are encrypted", data: strings.Replace(all, "kind: ENC[", "port: 80\nkind: ENC[", 1), want: "the value of port (line 2) is not encrypted"},
		{name: "a key renamed", data: strings.Replace(all, "apiVersion: ENC[", "other: ENC[", 1), want: "the value of other (line 1) does not decrypt", wantIs: ErrModified},
		{name: "the MAC replaced", data: strings.Replace(secret, "mac: ENC[", "mac: XENC[", 1), want: "SOPS decryption failed: the MAC does not decrypt"},
		{name: "lastmodified changed", data: regexpReplace(t, secret, `lastmodified: "[^"]*"`, `lastmodified: "2001-01-01T00:00:00Z"`), want: "the MAC does not decrypt: the file was modified after it was encrypted", wantIs: ErrModified},
		{name: "lastmodified not a time", data: regexpReplace(t, secret, `lastmodified: "[^"]*"`, `lastmodified: "yesterday"`), want: `not a valid SOPS file: sops metadata: lastmodified "yesterday" is not an RFC 3339 time`},
		{name: "only PGP keys", data: metaAge, want: "SOPS-encrypted for pgp only; driftguard decrypts with age keys"},
		{name: "Shamir key groups", data: twoGroups, want: "SOPS file not supported: the data key is split between 2 key groups (Shamir secret sharing)"},
		{name: "two rules", data: strings.Replace(secret, "    encrypted_regex:", "    unencrypted_suffix: _x\n    encrypted_regex:", 1), want: "sops metadata sets unencrypted_suffix and encrypted_regex; at most one of them may be set"},
		{name: "no metadata", data: plainSecret, want: "not a valid SOPS file: no sops metadata in the first document"},
		{name: "a list document", data: "- a\n- b\n", want: "not a valid SOPS file: line 1: a YAML document that is a list"},
		{name: "a key that is not a string", data: strings.Replace(secret, "kind: Secret", "1: Secret", 1), want: "line 2: a mapping key that is not a string"},
		{name: "JSON value changed", data: strings.Replace(jsonSecret, `"kind": "Secret"`, `"kind": "ConfigMap"`, 1), json: true, want: "SOPS MAC mismatch", wantIs: ErrMACMismatch},
		{name: "JSON not an object", data: `["sops"]`, json: true, want: "not a valid SOPS file: not a JSON object"},
		{name: "JSON broken", data: jsonSecret[:len(jsonSecret)/2], json: true, want: "not a valid SOPS file: not valid JSON"},
		{name: "mac_only_encrypted: a changed encrypted value still fails", data: strings.Replace(macOnly, valueOf(macOnly, "password"), flip(valueOf(macOnly, "password")), 1), want: "does not decrypt", wantIs: ErrModified},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ids := tt.ids
			if ids == nil {
				ids = []string{key.Identity}
			}
			format := YAML
			if tt.json {
				format = JSON
			}
			out, err := Decrypt([]byte(tt.data), format, identities(t, ids...))
			if err == nil {
				t.Fatalf("no error; decrypted:\n%s", out)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("err = %q, want containing %q", err, tt.want)
			}
			if tt.wantIs != nil && !errors.Is(err, tt.wantIs) {
				t.Errorf("err = %v, want errors.Is %v", err, tt.wantIs)
			}
			for _, leak := range []string{"hunter2", "very-secret", key.Identity, other.Identity} {
				if strings.Contains(err.Error(), leak) {
					t.Errorf("the error shows %q: %v", leak, err)
				}
			}
		})
	}

	// mac_only_encrypted leaves plain values out of the MAC: changing one
	// is no error, for sops as for us.
	changed := []byte(strings.Replace(macOnly, "namespace: shop", "namespace: prod", 1))
	got, err := Decrypt(changed, YAML, identities(t, key.Identity))
	if err != nil {
		t.Fatalf("mac_only_encrypted, a plain value changed: %v", err)
	}
	if _, err := sopstest.Decrypt(changed, false, key.Identity); err != nil {
		t.Fatalf("sops' own decryption of the same: %v", err)
	}
	if !bytes.Contains(got, []byte("namespace: prod")) || !bytes.Contains(got, []byte("hunter2-very-secret")) {
		t.Errorf("mac_only_encrypted, decrypted:\n%s", got)
	}
}

func TestParseIdentities(t *testing.T) {
	key := newKey(t)
	hybrid, err := age.GenerateHybridIdentity()
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		text    string
		want    int
		wantErr string
	}{
		{"one key", key.Identity, 1, ""},
		{"age-keygen file", "# created: 2026-01-01T00:00:00Z\n# public key: " + key.Recipient + "\n" + key.Identity + "\n", 1, ""},
		{"CRLF and blank lines", key.Identity + "\r\n\r\n" + hybrid.String() + "\r\n", 2, ""},
		{"hybrid", hybrid.String(), 1, ""},
		{"broken key", "AGE-SECRET-KEY-1SECRETBUTBROKEN", 0, "line 1 does not parse"},
		{"broken second line", key.Identity + "\nAGE-SECRET-KEY-1SECRETBUTBROKEN", 0, "line 2 does not parse"},
		{"a recipient", key.Recipient, 0, "line 1 does not parse"},
		{"a plugin", "AGE-PLUGIN-YUBIKEY-1SECRETBUTBROKEN", 0, "age plugin identities (AGE-PLUGIN-...) are not supported"},
		{"only comments", "# nothing\n", 0, "no identity in the text"},
		{"empty", "", 0, "no identity in the text"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ids, err := ParseIdentities(tt.text)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want %q", err, tt.wantErr)
				}
				if strings.Contains(err.Error(), "SECRETBUTBROKEN") {
					t.Errorf("the error shows the key: %v", err)
				}
				return
			}
			if err != nil || len(ids) != tt.want {
				t.Fatalf("got %d identities, %v; want %d", len(ids), err, tt.want)
			}
		})
	}
}

func regexpReplace(t *testing.T, s, expr, repl string) string {
	t.Helper()
	out := regexp.MustCompile(expr).ReplaceAllString(s, repl)
	if out == s {
		t.Fatalf("fixture: %q matches nothing", expr)
	}
	return out
}

// FuzzDecrypt: whatever a SOPS file is changed into, Decrypt does not
// panic, and its errors never show a value of the file.
func FuzzDecrypt(f *testing.F) {
	key, err := sopstest.NewKey()
	if err != nil {
		f.Fatal(err)
	}
	for _, o := range []sopstest.Options{{}, {EncryptedRegex: "^stringData$"}} {
		enc, err := sopstest.Encrypt([]byte(plainSecret+"list:\n  # c\n  - a: 1.5\n    b: [true, ~]\n"), o, key.Recipient)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(enc, false)
	}
	enc, err := sopstest.Encrypt([]byte(`{"stringData": {"password": "hunter2-very-secret"}, "n": [1, 2.5]}`), sopstest.Options{JSON: true}, key.Recipient)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(enc, true)
	ids, err := ParseIdentities(key.Identity)
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, data []byte, json bool) {
		format := YAML
		if json {
			format = JSON
		}
		_, err := Decrypt(data, format, ids)
		if err != nil && strings.Contains(err.Error(), "very-secret") {
			t.Fatalf("the error shows a value: %v", err)
		}
	})
}

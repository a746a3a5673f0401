package render

import (
	"bytes"
	"errors"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/driftguard/driftguard/render/sopstest"
)

const plainSecret = `apiVersion: v1
kind: Secret
metadata:
  name: db
  namespace: shop
stringData:
  password: hunter2-very-secret
`

func newAgeKey(t *testing.T) sopstest.Key {
	t.Helper()
	k, err := sopstest.NewKey()
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func encrypt(t *testing.T, plain string, o sopstest.Options, recipients ...string) string {
	t.Helper()
	out, err := sopstest.Encrypt([]byte(plain), o, recipients...)
	if err != nil {
		t.Fatalf("encrypt: %v", err)
	}
	return string(out)
}

func TestRenderSOPS(t *testing.T) {
	key, other := newAgeKey(t), newAgeKey(t)
	k8sStyle := sopstest.Options{EncryptedRegex: "^(data|stringData)$"}
	secretYAML := encrypt(t, plainSecret, k8sStyle, key.Recipient)
	allYAML := encrypt(t, plainSecret, sopstest.Options{}, other.Recipient, key.Recipient)
	twoDocs := encrypt(t, plainSecret+"---\n"+strings.ReplaceAll(plainSecret, "name: db", "name: cache"), k8sStyle, key.Recipient)
	secretJSON := encrypt(t, `{"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "api", "namespace": "shop"}, "stringData": {"token": "t0ken-very-secret"}}`,
		sopstest.Options{JSON: true, EncryptedRegex: "^stringData$"}, key.Recipient)
	if strings.Contains(secretYAML, "hunter2") || !strings.Contains(secretYAML, "ENC[AES256_GCM") {
		t.Fatalf("fixture is not encrypted:\n%s", secretYAML)
	}

	tests := []struct {
		name  string
		fsys  fstest.MapFS
		keys  []string
		want  map[string]string // object name -> password/token
		lines map[string]int
	}{
		{"Kubernetes style, encrypted_regex", files("secret.yaml", secretYAML), []string{key.Identity}, map[string]string{"db": "hunter2-very-secret"}, map[string]int{"db": 1}},
		{"every value encrypted, second recipient", files("secret.yaml", allYAML), []string{key.Identity}, map[string]string{"db": "hunter2-very-secret"}, map[string]int{"db": 1}},
		{"two keys, the second matches", files("secret.yaml", secretYAML), []string{other.Identity, "# created by age-keygen\n" + key.Identity}, map[string]string{"db": "hunter2-very-secret"}, nil},
		{"two documents keep their encrypted lines", files("secret.yaml", twoDocs), []string{key.Identity}, map[string]string{"db": "hunter2-very-secret", "cache": "hunter2-very-secret"}, map[string]int{"db": 1, "cache": docLine(twoDocs, 2)}},
		{"JSON", files("secret.json", secretJSON), []string{key.Identity}, map[string]string{"api": "t0ken-very-secret"}, nil},
		{"plain files need no key", files("cm.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: plain}\ndata: {sops: mac}\n"), nil, map[string]string{"plain": ""}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			objs, err := RenderWith(tt.fsys, "", Source{}, RenderOptions{AgeKeys: tt.keys})
			if err != nil {
				t.Fatal(err)
			}
			if len(objs) != len(tt.want) {
				t.Fatalf("got %d objects, want %d", len(objs), len(tt.want))
			}
			for _, o := range objs {
				want, ok := tt.want[o.Obj().GetName()]
				if !ok {
					t.Fatalf("unexpected object %s", o.Key)
				}
				if _, has := o.Obj().Object["sops"]; has {
					t.Errorf("%s keeps its sops metadata", o.Key)
				}
				sd, _ := o.Obj().Object["stringData"].(map[string]any)
				got, _ := sd["password"].(string)
				if got == "" {
					got, _ = sd["token"].(string)
				}
				if got != want {
					t.Errorf("%s: secret value = %q, want %q", o.Key, got, want)
				}
				if l, ok := tt.lines[o.Obj().GetName()]; ok && o.Source.Line != l {
					t.Errorf("%s at line %d, want %d", o.Key, o.Source.Line, l)
				}
			}
		})
	}
}

// docLine returns the line where document n (1-based) of a YAML stream starts.
func docLine(s string, n int) int {
	docs, err := decodeYAML([]byte(s), DefaultLimits())
	if err != nil || len(docs) < n {
		return -1
	}
	return docs[n-1].line
}

func TestRenderSOPSErrors(t *testing.T) {
	key, other := newAgeKey(t), newAgeKey(t)
	secretYAML := encrypt(t, plainSecret, sopstest.Options{EncryptedRegex: "^(data|stringData)$"}, key.Recipient)
	tampered := strings.Replace(secretYAML, "namespace: shop", "namespace: prod", 1)
	if tampered == secretYAML {
		t.Fatal("fixture has no plain namespace to tamper with")
	}
	tests := []struct {
		name    string
		fsys    fstest.MapFS
		keys    []string
		wantErr string
	}{
		{"no key given", files("apps/secret.yaml", secretYAML), nil, "apps/secret.yaml: the file is SOPS-encrypted and no age key is given"},
		{"no key matches", files("apps/secret.yaml", secretYAML), []string{other.Identity}, "apps/secret.yaml: SOPS decryption failed: none of the 1 age key given matches the file's age recipients " + key.Recipient},
		{"changed after encryption", files("apps/secret.yaml", tampered), []string{key.Identity}, "apps/secret.yaml: SOPS MAC mismatch"},
		{"broken metadata", files("apps/secret.yaml", strings.Replace(secretYAML, "mac: ENC[", "mac: XENC[", 1)), []string{key.Identity}, "apps/secret.yaml: SOPS decryption failed: the MAC does not decrypt"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := RenderWith(tt.fsys, "", Source{}, RenderOptions{AgeKeys: tt.keys})
			var re *RenderError
			if !errors.As(err, &re) || re.Path != "apps/secret.yaml" {
				t.Fatalf("err = %v, want a RenderError naming apps/secret.yaml", err)
			}
			if !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("err = %q, want containing %q", err, tt.wantErr)
			}
			for _, leak := range []string{"hunter2", key.Identity, other.Identity} {
				if strings.Contains(err.Error(), leak) {
					t.Errorf("error reveals %q: %v", leak, err)
				}
			}
		})
	}

	if _, err := RenderWith(files("a.yaml", plainSecret), "", Source{}, RenderOptions{AgeKeys: []string{"AGE-SECRET-KEY-1NOTAKEY"}}); err == nil || strings.Contains(err.Error(), "NOTAKEY") {
		t.Errorf("a bad age key: err = %v, want an error that does not repeat the key", err)
	}
}

func TestIsSOPS(t *testing.T) {
	key := newAgeKey(t)
	enc := encrypt(t, plainSecret, sopstest.Options{}, key.Recipient)
	encJSON := encrypt(t, `{"a": "b"}`, sopstest.Options{JSON: true}, key.Recipient)
	tests := []struct {
		name, path, data string
		want             bool
	}{
		{"encrypted YAML", "s.yaml", enc, true},
		{"encrypted JSON", "s.json", encJSON, true},
		{"plain", "s.yaml", plainSecret, false},
		{"a sops key nested", "s.yaml", "a:\n  sops:\n    mac: ENC[x]\n", false},
	}
	for _, tt := range tests {
		if got := isSOPS(tt.path, []byte(tt.data)); got != tt.want {
			t.Errorf("%s: isSOPS = %v, want %v", tt.name, got, tt.want)
		}
	}
	if !bytes.Contains([]byte(enc), []byte("age1")) {
		t.Error("fixture names no age recipient")
	}
}

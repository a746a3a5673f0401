package render

import (
	"encoding/base64"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/driftguard/driftguard/redact"
	"github.com/driftguard/driftguard/render/sopsfile"
	"github.com/driftguard/driftguard/render/sopstest"
)

// TestSensitiveValues: a render marks what must never leave in clear
// (decrypted SOPS values of any kind, variables from Secrets, the data of
// Secrets, its age keys) on every object, and nothing else.
func TestSensitiveValues(t *testing.T) {
	key := newAgeKey(t)
	sopsCM := encrypt(t, "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: app, namespace: shop}\ndata:\n  dsn: postgres://app:cm-decrypted-Pw1@db/app\n  mode: on\n",
		sopstest.Options{EncryptedRegex: "^data$"}, key.Recipient)
	withVar := "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: vars, namespace: shop}\ndata:\n  password: ${DB_PASS}\n  region: ${REGION}\n"
	plainSecret := fmt.Sprintf("apiVersion: v1\nkind: Secret\nmetadata: {name: s, namespace: shop}\ndata:\n  token: %s\nstringData:\n  other: string-data-value-1\n",
		base64.StdEncoding.EncodeToString([]byte("secret-data-value-1")))
	plain := "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: plain-config-map}\ndata: {k: plain-value-not-secret}\n"

	tests := []struct {
		name    string
		fsys    map[string]string
		opts    RenderOptions
		want    []string // among the sensitive values
		notWant []string
	}{
		{"SOPS-encrypted ConfigMap", map[string]string{"cm.yaml": sopsCM}, RenderOptions{AgeKeys: []string{key.Identity}},
			[]string{"postgres://app:cm-decrypted-Pw1@db/app", key.Identity}, []string{"app", "shop", "on"}},
		{"variable from a Secret", map[string]string{"cm.yaml": withVar},
			RenderOptions{Vars: map[string]string{"DB_PASS": "var-from-secret-1", "REGION": "eu-west-region"}, SecretVars: []string{"DB_PASS"}},
			[]string{"var-from-secret-1"}, []string{"eu-west-region"}},
		{"data of a Secret in Git", map[string]string{"s.yaml": plainSecret}, RenderOptions{},
			[]string{"secret-data-value-1", "string-data-value-1"}, nil},
		{"nothing secret", map[string]string{"cm.yaml": plain}, RenderOptions{}, nil, []string{"plain-value-not-secret"}},
		{"credentials of the source", map[string]string{"cm.yaml": plain}, RenderOptions{Credentials: []string{"git-password-1", "-----BEGIN KEY-----\nbase64-key-line-1\n-----END KEY-----"}},
			[]string{"git-password-1", "-----BEGIN KEY-----\nbase64-key-line-1\n-----END KEY-----"}, []string{"plain-value-not-secret"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var kv []string
			for k, v := range tt.fsys {
				kv = append(kv, k, v)
			}
			objs, err := RenderWith(files(kv...), "", Source{}, tt.opts)
			if err != nil {
				t.Fatal(err)
			}
			snap, err := NewSnapshot("u", "r", objs)
			if err != nil {
				t.Fatal(err)
			}
			got := snap.SensitiveValues()
			for _, w := range tt.want {
				if !slices.Contains(got, w) {
					t.Errorf("sensitive values %q lack %q", got, w)
				}
			}
			for _, w := range tt.notWant {
				if slices.Contains(got, w) {
					t.Errorf("sensitive values %q hold %q, which is not secret", got, w)
				}
			}
			for _, o := range objs {
				if (o.Sensitive() == nil) != (len(tt.want) == 0) {
					t.Errorf("%s: Sensitive() = %v with %d sensitive values", o.Key, o.Sensitive(), len(tt.want))
				}
				if d := NewObjectFrom(o.Obj(), o); d.Sensitive() != o.Sensitive() {
					t.Errorf("%s: a decorated copy lost its sensitive values", o.Key)
				}
			}
		})
	}
}

// TestRenderErrorsScrubbed: an error a render reports never quotes one of
// its secret values; errors.As still finds what it wraps.
func TestRenderErrorsScrubbed(t *testing.T) {
	r, err := newRenderer(files(), Source{}, RenderOptions{Vars: map[string]string{"PW": "var-from-secret-2"}, SecretVars: []string{"PW"}})
	if err != nil {
		t.Fatal(err)
	}
	r.fail(&RenderError{Path: "a.yaml", Line: 3, Err: fmt.Errorf("cannot use %q: %w", "var-from-secret-2", &sopsfile.LimitError{Limit: sopsfile.LimitDepth, Where: "line 3", Max: 1})})
	r.fail(&RenderError{Path: "b.yaml", Err: errors.New("nothing secret here")})
	err = r.err()
	if msg := err.Error(); strings.Contains(msg, "var-from-secret-2") || !strings.Contains(msg, redact.Marker) || !strings.Contains(msg, "nothing secret here") {
		t.Errorf("render error = %q, want the value replaced by %s and the rest kept", msg, redact.Marker)
	}
	var le *sopsfile.LimitError
	if !errors.As(err, &le) {
		t.Errorf("errors.As lost the wrapped error of %v", err)
	}
}

// TestStoreRegistersSecrets: the snapshot in force registers its values
// with redact.Secrets; a new revision and removing the Guard forget them.
func TestStoreRegistersSecrets(t *testing.T) {
	render := func(pw string) *Snapshot {
		objs, err := RenderWith(files("cm.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c, namespace: n}\ndata:\n  p: ${PW}\n"), "", Source{},
			RenderOptions{Vars: map[string]string{"PW": pw}, SecretVars: []string{"PW"}})
		if err != nil {
			t.Fatal(err)
		}
		s, err := NewSnapshot("u", pw, objs)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	s := NewStore()
	s.Set("store-test", render("first-secret-value"))
	if got := redact.Secrets.String("x first-secret-value"); got != "x "+redact.Marker {
		t.Errorf("after Set: %q", got)
	}
	s.Set("store-test", render("second-secret-value"))
	if got := redact.Secrets.String("first-secret-value second-secret-value"); got != "first-secret-value "+redact.Marker {
		t.Errorf("after a new revision: %q, want the old value forgotten and the new one redacted", got)
	}
	s.Remove("store-test")
	if got := redact.Secrets.String("second-secret-value"); got != "second-secret-value" {
		t.Errorf("after Remove: %q, want forgotten", got)
	}
}

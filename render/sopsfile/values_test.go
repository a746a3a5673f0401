package sopsfile

import (
	"slices"
	"testing"

	"github.com/driftguard/driftguard/render/sopstest"
)

// TestDecryptValues: the values that were encrypted come back as text, in
// file order; values left in clear and comments do not.
func TestDecryptValues(t *testing.T) {
	k := newKey(t)
	plain := "# a comment\nkind: ConfigMap\ndata:\n  user: admin-user\n  port: 5432\n  tls: true\n  list: [first-item, second-item]\nnote_unencrypted: in-clear-value\n"
	tests := []struct {
		name string
		opts sopstest.Options
		want []string
	}{
		{"everything", sopstest.Options{UnencryptedSuffix: "_unencrypted"}, []string{"ConfigMap", "admin-user", "5432", "true", "first-item", "second-item"}},
		{"encrypted_regex", sopstest.Options{EncryptedRegex: "^data$"}, []string{"admin-user", "5432", "true", "first-item", "second-item"}},
		{"JSON", sopstest.Options{JSON: true, EncryptedRegex: "^data$"}, []string{"admin-user", "5432", "true", "first-item", "second-item"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := plain
			format := YAML
			if tt.opts.JSON {
				in, format = `{"kind": "ConfigMap", "data": {"user": "admin-user", "port": 5432, "tls": true, "list": ["first-item", "second-item"]}, "note_unencrypted": "in-clear-value"}`, JSON
			}
			_, got, err := DecryptValues(encrypt(t, in, tt.opts, k.Recipient), format, identities(t, k.Identity), Limits{})
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("values = %q, want %q", got, tt.want)
			}
		})
	}
}

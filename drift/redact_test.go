package drift

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"testing"
)

func TestRedactValue(t *testing.T) {
	digest := func(s string) string {
		sum := sha256.Sum256([]byte(s))
		return "sha256:" + hex.EncodeToString(sum[:])[:12]
	}
	tests := []struct {
		name string
		v    any
		want string
	}{
		{"string is hashed as JSON", "hunter2", digest(`"hunter2"`)},
		{"example in docs/audit.md", "hunter2", "sha256:4ddbb67bf993"},
		{"number", 42, digest(`42`)},
		{"nil", nil, digest(`null`)},
		{"map keys sorted", map[string]any{"b": 1, "a": 2}, digest(`{"a":2,"b":1}`)},
		{"bytes as base64", []byte("pw"), digest(`"cHc="`)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := RedactValue(tc.v)
			if got != tc.want {
				t.Errorf("RedactValue(%v) = %q, want %q", tc.v, got, tc.want)
			}
			if len(got) != len("sha256:")+12 {
				t.Errorf("length %d", len(got))
			}
		})
	}
	if RedactValue("a") == RedactValue("b") {
		t.Error("different values give the same digest")
	}
	if got := RedactValue(make(chan int)); !strings.HasPrefix(got, "sha256:") {
		t.Errorf("unencodable value: %q", got)
	}
}

package gitwrite

import (
	"strings"
	"testing"
)

func TestWriteTrailers(t *testing.T) {
	tests := []struct {
		name  string
		pairs []string
		want  string
	}{
		{"none", nil, ""},
		{"one", []string{"Guard", "shop"}, "Guard: shop\n"},
		{"empty values left out", []string{"Break-glass-reason", "", "Adopted-by", "ana", "Guard", ""}, "Adopted-by: ana\n"},
		{"in the order given", []string{"Rolled-back-by", "bo", "Guard", "shop"}, "Rolled-back-by: bo\nGuard: shop\n"},
		{"a key without a value is no pair", []string{"Guard", "shop", "Dangling"}, "Guard: shop\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var b strings.Builder
			writeTrailers(&b, tt.pairs...)
			if b.String() != tt.want {
				t.Errorf("got %q, want %q", b.String(), tt.want)
			}
		})
	}
}

package source

import "testing"

func TestShortRevision(t *testing.T) {
	tests := []struct{ rev, want string }{
		{"9f2c1e0a5b7d4c3e2f1a0b9c8d7e6f5a4b3c2d1e", "9f2c1e0"},
		{"v1.2.0@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef", "v1.2.0@sha256:0123456"},
		{"sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef", "sha256:0123456"},
		{"podinfo@6.5.0@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef", "podinfo@6.5.0@sha256:0123456"},
		{"chart@1.2.3", "chart@1.2.3"},
		{"abc", "abc"},
		{"", ""},
	}
	for _, tt := range tests {
		if got := ShortRevision(tt.rev); got != tt.want {
			t.Errorf("ShortRevision(%q) = %q, want %q", tt.rev, got, tt.want)
		}
	}
}

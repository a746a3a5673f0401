package source

import "testing"

func TestSameRepository(t *testing.T) {
	tests := []struct {
		a, b string
		same bool
	}{
		{"https://git.example/org/infra.git", "https://git.example/org/infra", true},
		{"https://GIT.example/org/infra/", "http://git.example/org/infra.git", true},
		{"git@git.example:org/infra.git", "https://git.example/org/infra", true},
		{"ssh://git@git.example/org/infra.git", "https://git.example/org/infra", true},
		{"https://git.example/org/infra", "https://git.example/org/other", false},
		{"http://127.0.0.1:4000/shop.git", "http://127.0.0.1:4000/shop", true},
	}
	for _, tt := range tests {
		if got := SameRepository(tt.a, tt.b); got != tt.same {
			t.Errorf("SameRepository(%q, %q) = %v, want %v", tt.a, tt.b, got, tt.same)
		}
	}
}

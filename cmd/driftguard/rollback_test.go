package main

import "testing"

func TestCleanPath(t *testing.T) {
	tests := map[string]string{
		"": "", ".": "", "/": "", "./": "",
		"apps/shop": "apps/shop", "./apps/shop/": "apps/shop", "/apps//shop": "apps/shop",
		`apps\shop`: "apps/shop", "apps/../base": "base", "../../etc": "etc",
	}
	for in, want := range tests {
		if got := cleanPath(in); got != want {
			t.Errorf("cleanPath(%q) = %q, want %q", in, got, want)
		}
	}
}

package webhook

import (
	"strings"
	"testing"

	"github.com/driftguard/driftguard/render"
)

// TestSourceNameRedactsURL: the Git source a denial, warning or orphan
// message names carries no credentials.
func TestSourceNameRedactsURL(t *testing.T) {
	tests := []struct {
		url, want string
	}{
		{"https://deploy:SECRET@git.example/infra.git", "https://git.example/infra.git apps/web.yaml:3@9f2c1e0"},
		{"https://ghp_SECRET@github.com/org/infra.git", "https://github.com/org/infra.git apps/web.yaml:3@9f2c1e0"},
		{"https://charts.example/?token=SECRET", "https://charts.example/?token=REDACTED apps/web.yaml:3@9f2c1e0"},
		{"https://git.example/infra.git", "https://git.example/infra.git apps/web.yaml:3@9f2c1e0"},
	}
	for _, tt := range tests {
		got := sourceName(render.Source{URL: tt.url, Path: "apps/web.yaml", Line: 3, Revision: "9f2c1e0d4b"})
		if got != tt.want || strings.Contains(got, "SECRET") {
			t.Errorf("sourceName(%s) = %q, want %q", tt.url, got, tt.want)
		}
	}
}

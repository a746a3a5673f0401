package policy

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/go-logr/logr"
)

// TestPolicySeesNoCredentials: the URLs a policy sees carry no
// credentials, so a reason that quotes them leaks none into denial
// messages and audit records; the caller's input is left alone.
func TestPolicySeesNoCredentials(t *testing.T) {
	e := NewEngine(testConfig, logr.Discard())
	if err := e.Load(map[string]string{"echo.rego": `package driftguard

decision := {"action": "deny", "reason": concat(" ", [
	input.source.url,
	object.get(input, ["guardSpec", "url"], "-"),
	object.get(input, ["guardSpec", "git", "url"], "-"),
	object.get(input, ["guardSpec", "helmRepository", "url"], "-"),
])}
`}); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name      string
		sourceURL string
		spec      map[string]any
		want      string
	}{
		{"user and token", "https://deploy:SECRET@git.example/infra.git",
			map[string]any{"url": "https://deploy:SECRET@git.example/infra.git"},
			"https://git.example/infra.git https://git.example/infra.git - -"},
		{"token as user, git form", "https://ghp_SECRET@github.com/org/infra.git",
			map[string]any{"git": map[string]any{"url": "https://ghp_SECRET@github.com/org/infra.git", "ref": "main"}},
			"https://github.com/org/infra.git - https://github.com/org/infra.git -"},
		{"query token, helm", "https://charts.example?token=SECRET",
			map[string]any{"helmRepository": map[string]any{"url": "https://charts.example?token=SECRET", "chart": "web"}},
			"https://charts.example?token=REDACTED - - https://charts.example?token=REDACTED"},
		{"nothing to take out", "https://git.example/infra.git",
			map[string]any{"url": "https://git.example/infra.git"},
			"https://git.example/infra.git https://git.example/infra.git - -"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := baseInput()
			in.Source.URL = tt.sourceURL
			in.GuardSpec = tt.spec
			d, err := e.Decide(context.Background(), in)
			if err != nil {
				t.Fatal(err)
			}
			if d.Reason != tt.want {
				t.Fatalf("reason %q, want %q", d.Reason, tt.want)
			}
			if in.Source.URL != tt.sourceURL || (strings.Contains(tt.sourceURL, "SECRET") && !strings.Contains(fmt.Sprint(in.GuardSpec), "SECRET")) {
				t.Fatalf("Decide changed the caller's input: %+v", in)
			}
		})
	}
}

package notify

import (
	"testing"

	"github.com/driftguard/driftguard/audit"
)

// TestOfRedactsSource: a notification names the source without
// credentials, even for a record that did not come through the Logger.
func TestOfRedactsSource(t *testing.T) {
	tests := []struct {
		url, want string
	}{
		{"https://deploy:SECRET@git.example/infra.git", "https://git.example/infra.git"},
		{"https://ghp_SECRET@github.com/org/infra.git", "https://github.com/org/infra.git"},
		{"https://charts.example?token=SECRET", "https://charts.example?token=REDACTED"},
	}
	for _, tt := range tests {
		src := &audit.Source{URL: tt.url, Revision: "9f2c1e0"}
		n, ok := Of(audit.Record{Type: audit.Error, Guard: "shop", Operation: "SYNC", Error: "x", Source: src})
		if !ok || n.Source == nil || n.Source.URL != tt.want || n.Source.Revision != "9f2c1e0" {
			t.Errorf("Of(%s) source = %+v, want URL %s", tt.url, n.Source, tt.want)
		}
		if src.URL != tt.url {
			t.Errorf("Of changed the record's source: %s", src.URL)
		}
	}
}

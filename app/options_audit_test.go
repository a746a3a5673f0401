package app

import (
	"strings"
	"testing"
	"time"
)

func TestValidateAuditDrainTimeout(t *testing.T) {
	for _, tc := range []struct {
		name  string
		drain time.Duration
		want  string // substring of the error; "" for none
	}{
		{"default", DefaultOptions().AuditDrainTimeout, ""},
		{"none", 0, ""},
		{"at the bound", maxAuditDrainTimeout, ""},
		{"negative", -time.Second, "--audit-drain-timeout"},
		{"past the pod's grace period", 40 * time.Second, "--audit-drain-timeout"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := DefaultOptions()
			o.AuditDrainTimeout = tc.drain
			err := o.Validate()
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("unexpected error: %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("error %v does not name %s", err, tc.want)
			}
		})
	}
	if d := DefaultOptions().AuditDrainTimeout; d <= 0 || d > 10*time.Second {
		t.Errorf("default --audit-drain-timeout %s: want a few seconds, well inside the 30 s grace period", d)
	}
}

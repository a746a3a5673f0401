package app

import (
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
			validateNames(t, &o, tc.want)
		})
	}
	if d := DefaultOptions().AuditDrainTimeout; d <= 0 || d > 10*time.Second {
		t.Errorf("default --audit-drain-timeout %s: want a few seconds, well inside the 30 s grace period", d)
	}
}

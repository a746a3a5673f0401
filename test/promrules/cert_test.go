package promrules

import (
	"testing"
	"time"

	"github.com/prometheus/prometheus/util/teststorage"
)

// certificateAlert: the guard's last exposition, stored again and again
// from three days before its serving certificate expires, fires
// DriftguardCertificateExpiresSoon once its `for` has passed; the same
// scrapes now (TestAlertsAndDashboards) leave it quiet.
func certificateAlert(t *testing.T, body []byte) {
	mfs, err := families(body)
	if err != nil {
		t.Fatal(err)
	}
	mf := mfs["driftguard_webhook_certificate_expiration_timestamp_seconds"]
	if mf == nil || len(mf.GetMetric()) != 1 {
		t.Fatalf("the guard exposes no certificate expiry: %v", names(mfs))
	}
	notAfter := time.Unix(int64(mf.GetMetric()[0].GetGauge().GetValue()), 0)
	if until := time.Until(notAfter); until < 300*24*time.Hour {
		t.Fatalf("the harness's certificate expires in %s; a fresh one is valid for a year", until)
	}
	start := notAfter.Add(-72 * time.Hour).Truncate(step)
	const n = 60 // 15 minutes of scrapes
	bodies := make([][]byte, n)
	for i := range bodies {
		bodies[i] = body
	}
	st := teststorage.New(t)
	if err := store(st, bodies, start); err != nil {
		t.Fatal(err)
	}
	engine := newEngine()
	groups := loadRules(t, engine, st)
	end := start.Add((n - 1) * step)
	evaluate(groups, start, end)
	rule := alertingRules(groups)["DriftguardCertificateExpiresSoon"]
	if rule == nil {
		t.Fatal("no rule DriftguardCertificateExpiresSoon")
	}
	if !firingFor(rule, "job", "driftguard") {
		t.Fatalf("three days before expiry the alert does not fire: %s", describe(rule))
	}
}

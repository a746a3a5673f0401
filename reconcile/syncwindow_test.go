package reconcile

import (
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/driftguard/driftguard/api/v1alpha1"
)

func TestEvaluateWindows(t *testing.T) {
	at := func(s string) time.Time {
		tm, err := time.Parse(time.RFC3339, s)
		if err != nil {
			t.Fatal(err)
		}
		return tm
	}
	win := func(kind, sched string, d time.Duration, tz string, manual bool) v1alpha1.SyncWindow {
		return v1alpha1.SyncWindow{Kind: kind, Schedule: sched, Duration: metav1.Duration{Duration: d}, TimeZone: tz, ManualSync: manual}
	}
	cases := []struct {
		name     string
		windows  []v1alpha1.SyncWindow
		now      string
		open     bool
		manualOK bool
		msg      string
	}{
		{"no windows", nil, "2026-12-03T10:00:00Z", true, true, ""},
		{"inside deny", []v1alpha1.SyncWindow{win("deny", "0 22 * * *", 4*time.Hour, "", false)}, "2026-12-03T23:30:00Z", false, false, "open until 2026-12-04T02:00:00Z"},
		{"deny spans midnight", []v1alpha1.SyncWindow{win("deny", "0 22 * * *", 4*time.Hour, "", false)}, "2026-12-04T01:59:00Z", false, false, "deny window"},
		{"after deny", []v1alpha1.SyncWindow{win("deny", "0 22 * * *", 4*time.Hour, "", false)}, "2026-12-04T02:00:00Z", true, true, ""},
		{"deny with manual sync", []v1alpha1.SyncWindow{win("deny", "0 22 * * *", 4*time.Hour, "", true)}, "2026-12-03T22:00:00Z", false, true, "deny window"},
		{"inside allow", []v1alpha1.SyncWindow{win("allow", "0 9 * * 1-5", 8*time.Hour, "", false)}, "2026-12-03T10:00:00Z", true, true, ""},
		{"outside allow", []v1alpha1.SyncWindow{win("allow", "0 9 * * 1-5", 8*time.Hour, "", false)}, "2026-12-03T18:00:00Z", false, false, "next window opens at 2026-12-04T09:00:00Z"},
		{"weekend outside allow", []v1alpha1.SyncWindow{win("allow", "0 9 * * 1-5", 8*time.Hour, "", true)}, "2026-12-05T10:00:00Z", false, true, "2026-12-07T09:00:00Z"},
		{"deny wins over allow", []v1alpha1.SyncWindow{win("allow", "0 0 * * *", 24*time.Hour, "", false), win("deny", "0 12 * * *", time.Hour, "", false)}, "2026-12-03T12:30:00Z", false, false, "deny window"},
		{"time zone", []v1alpha1.SyncWindow{win("deny", "0 9 * * *", time.Hour, "Europe/Berlin", false)}, "2026-12-03T08:30:00Z", false, false, "Europe/Berlin"},
		{"time zone outside", []v1alpha1.SyncWindow{win("deny", "0 9 * * *", time.Hour, "Europe/Berlin", false)}, "2026-12-03T09:30:00Z", true, true, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			g, err := EvaluateWindows(c.windows, at(c.now))
			if err != nil {
				t.Fatal(err)
			}
			if g.Open != c.open || g.ManualOK != c.manualOK {
				t.Fatalf("open=%v manualOK=%v, want %v %v (%s)", g.Open, g.ManualOK, c.open, c.manualOK, g.Message)
			}
			if !strings.Contains(g.Message, c.msg) {
				t.Fatalf("message %q does not contain %q", g.Message, c.msg)
			}
			if !g.Open && !g.Next.After(at(c.now)) {
				t.Fatalf("next %v is not after now", g.Next)
			}
		})
	}
}

func TestEvaluateWindowsBadInput(t *testing.T) {
	for _, c := range []struct {
		w    v1alpha1.SyncWindow
		want string
	}{
		{v1alpha1.SyncWindow{Kind: "deny", Schedule: "61 * * * *", Duration: metav1.Duration{Duration: time.Hour}}, "spec.syncWindows[0].schedule"},
		{v1alpha1.SyncWindow{Kind: "deny", Schedule: "0 * * * *", Duration: metav1.Duration{Duration: time.Hour}, TimeZone: "Mars/Olympus"}, "spec.syncWindows[0].timeZone"},
		{v1alpha1.SyncWindow{Kind: "deny", Schedule: "0 * * * *"}, "spec.syncWindows[0].duration"},
	} {
		_, err := EvaluateWindows([]v1alpha1.SyncWindow{c.w}, time.Now())
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Fatalf("error %v, want one naming %s", err, c.want)
		}
	}
}

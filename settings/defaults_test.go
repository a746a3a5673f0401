package settings

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/driftguard/driftguard/api/v1alpha1"
)

func TestDefaults(t *testing.T) {
	guard := func(spec v1alpha1.GuardSpec) *v1alpha1.Guard { return &v1alpha1.Guard{Spec: spec} }
	for _, tc := range []struct {
		name        string
		guard       *v1alpha1.Guard
		selfHeal    bool
		enforcement string
		ttl         time.Duration
	}{
		{name: "a Guard that cannot be read", guard: nil, selfHeal: true, enforcement: "deny", ttl: time.Hour},
		{name: "a Guard that sets nothing", guard: guard(v1alpha1.GuardSpec{}), selfHeal: true, enforcement: "deny", ttl: time.Hour},
		{name: "self-heal off", guard: guard(v1alpha1.GuardSpec{SelfHeal: ptr.To(false)}), selfHeal: false, enforcement: "deny", ttl: time.Hour},
		{name: "suspended", guard: guard(v1alpha1.GuardSpec{SelfHeal: ptr.To(true), Suspend: true}), selfHeal: false, enforcement: "deny", ttl: time.Hour},
		{name: "warn, a TTL of ten minutes", guard: guard(v1alpha1.GuardSpec{Enforcement: v1alpha1.EnforcementWarn, BreakGlassTTL: &metav1.Duration{Duration: 10 * time.Minute}}),
			selfHeal: true, enforcement: "warn", ttl: 10 * time.Minute},
		{name: "a TTL of zero is the default", guard: guard(v1alpha1.GuardSpec{BreakGlassTTL: &metav1.Duration{}}), selfHeal: true, enforcement: "deny", ttl: time.Hour},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := selfHeal(tc.guard); got != tc.selfHeal {
				t.Errorf("selfHeal = %v, want %v", got, tc.selfHeal)
			}
			if got := enforcement(tc.guard); got != tc.enforcement {
				t.Errorf("enforcement = %q, want %q", got, tc.enforcement)
			}
			if got := breakGlassTTL(tc.guard); got != tc.ttl {
				t.Errorf("breakGlassTTL = %v, want %v", got, tc.ttl)
			}
		})
	}
}

package settings

import (
	"time"

	"github.com/driftguard/driftguard/api/v1alpha1"
)

// DefaultBreakGlassTTL is how long a break-glass change is kept when the
// Guard sets no spec.breakGlassTTL.
const DefaultBreakGlassTTL = time.Hour

// selfHeal is on unless the Guard turns it off or is suspended; a Guard
// that cannot be read (nil) self-heals.
func selfHeal(g *v1alpha1.Guard) bool {
	return g == nil || (g.SelfHealEnabled() && !g.Spec.Suspend)
}

// enforcement is the Guard's mode, deny when unset.
func enforcement(g *v1alpha1.Guard) string {
	if g != nil && g.Spec.Enforcement != "" {
		return string(g.Spec.Enforcement)
	}
	return string(v1alpha1.EnforcementDeny)
}

// breakGlassTTL is the Guard's spec.breakGlassTTL, DefaultBreakGlassTTL
// when unset or not positive.
func breakGlassTTL(g *v1alpha1.Guard) time.Duration {
	if g != nil && g.Spec.BreakGlassTTL != nil && g.Spec.BreakGlassTTL.Duration > 0 {
		return g.Spec.BreakGlassTTL.Duration
	}
	return DefaultBreakGlassTTL
}

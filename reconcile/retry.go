package reconcile

import (
	"math/rand/v2"
	"time"

	"github.com/driftguard/driftguard/api/v1alpha1"
)

// The backoff of a Guard that sets no spec.retry.
const (
	defaultBackoff    = 5 * time.Second
	defaultFactor     = 2
	defaultMaxBackoff = 5 * time.Minute
)

// backoff is the wait before retry number n (1 for the first retry):
// duration × factor^(n-1), capped at maxDuration.
func backoff(p *v1alpha1.RetryPolicy, n int32) time.Duration {
	d, factor, maxD := defaultBackoff, int64(defaultFactor), defaultMaxBackoff
	if p != nil && p.Backoff != nil {
		b := p.Backoff
		if b.Duration != nil && b.Duration.Duration > 0 {
			d = b.Duration.Duration
		}
		if b.Factor >= 1 {
			factor = int64(b.Factor)
		}
		if b.MaxDuration != nil && b.MaxDuration.Duration > 0 {
			maxD = b.MaxDuration.Duration
		}
	}
	for i := int32(1); i < n && d < maxD; i++ {
		d *= time.Duration(factor)
	}
	return min(d, maxD)
}

// retryLimit is the number of retries after which a Guard is Stalled; 0
// means no limit.
func retryLimit(p *v1alpha1.RetryPolicy) int32 {
	if p == nil {
		return 0
	}
	return p.Limit
}

// jitter spreads d by up to ±10%, so that many Guards with one interval do
// not fetch at the same moment.
func jitter(d time.Duration) time.Duration {
	if d <= 0 {
		return d
	}
	spread := int64(d) / 5
	if spread <= 0 {
		return d
	}
	return d - time.Duration(spread/2) + time.Duration(rand.Int64N(spread))
}

package reconcile

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/driftguard/driftguard/api/v1alpha1"
)

func TestBackoff(t *testing.T) {
	dur := func(d time.Duration) *metav1.Duration { return &metav1.Duration{Duration: d} }
	custom := &v1alpha1.RetryPolicy{Limit: 3, Backoff: &v1alpha1.Backoff{Duration: dur(time.Second), Factor: 3, MaxDuration: dur(20 * time.Second)}}
	cases := []struct {
		p    *v1alpha1.RetryPolicy
		n    int32
		want time.Duration
	}{
		{nil, 1, 5 * time.Second},
		{nil, 2, 10 * time.Second},
		{nil, 4, 40 * time.Second},
		{nil, 100, 5 * time.Minute},
		{custom, 1, time.Second},
		{custom, 2, 3 * time.Second},
		{custom, 3, 9 * time.Second},
		{custom, 4, 20 * time.Second},
		{&v1alpha1.RetryPolicy{Backoff: &v1alpha1.Backoff{Factor: 1}}, 7, 5 * time.Second},
	}
	for _, c := range cases {
		if got := backoff(c.p, c.n); got != c.want {
			t.Errorf("backoff(%+v, %d) = %v, want %v", c.p, c.n, got, c.want)
		}
	}
}

func TestJitter(t *testing.T) {
	for range 1000 {
		if got := jitter(time.Minute); got < 54*time.Second || got > 66*time.Second {
			t.Fatalf("jitter(1m) = %v, outside ±10%%", got)
		}
	}
	if jitter(0) != 0 {
		t.Fatal("jitter(0) != 0")
	}
}

package policy

import (
	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

var policyLoads = prometheus.NewCounterVec(prometheus.CounterOpts{
	Name: "driftguard_policy_loads_total",
	Help: "Policy loads by result: loaded, or failed (the last good policy keeps serving).",
}, []string{"result"})

func init() { metrics.Registry.MustRegister(policyLoads) }

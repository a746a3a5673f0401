package reconcile

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/driftguard/driftguard/api/v1alpha1"
)

// Metrics of full reconciliation, on the manager's metrics endpoint.
var (
	reconcileDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "driftguard_reconcile_duration_seconds",
		Help:    "Duration of one full reconciliation of a Guard.",
		Buckets: []float64{0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 5, 10, 30, 60, 300},
	}, []string{"guard"})
	syncTotal = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "driftguard_sync_total",
		Help: "Full reconciliations by result: success, failed, blocked (manual sync or sync window), waiting (dependencies or health).",
	}, []string{"guard", "result"})
	guardCondition = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "driftguard_guard_condition",
		Help: "1 for the current status of each condition of a Guard (True, False, Unknown), 0 for the others.",
	}, []string{"guard", "type", "status"})
	gitFetchDuration = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:    "driftguard_git_fetch_duration_seconds",
		Help:    "Duration of asking Git for a Guard's revision, and fetching and rendering it when it is new.",
		Buckets: []float64{0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 5, 10, 30, 60},
	})
	managedObjects = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "driftguard_managed_objects",
		Help: "Objects of a Guard's applied revision.",
	}, []string{"guard"})
	driftedObjects = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "driftguard_drifted_objects",
		Help: "Managed objects of a Guard that differ from Git right now.",
	}, []string{"guard"})
)

func init() {
	metrics.Registry.MustRegister(reconcileDuration, syncTotal, guardCondition, gitFetchDuration, managedObjects, driftedObjects, syncStateObjects)
}

func observeFetch(d time.Duration) { gitFetchDuration.Observe(d.Seconds()) }

// observeGuard records the outcome of one reconcile of g.
func observeGuard(g *v1alpha1.Guard, took time.Duration, result string) {
	reconcileDuration.WithLabelValues(g.Name).Observe(took.Seconds())
	syncTotal.WithLabelValues(g.Name, result).Inc()
	managedObjects.WithLabelValues(g.Name).Set(float64(g.Status.ManagedObjects))
	driftedObjects.WithLabelValues(g.Name).Set(float64(g.Status.DriftedObjects))
	for _, c := range g.Status.Conditions {
		for _, s := range []metav1.ConditionStatus{metav1.ConditionTrue, metav1.ConditionFalse, metav1.ConditionUnknown} {
			v := 0.0
			if c.Status == s {
				v = 1
			}
			guardCondition.WithLabelValues(g.Name, c.Type, string(s)).Set(v)
		}
	}
}

// forgetGuardMetrics drops the series of a deleted Guard.
func forgetGuardMetrics(guard string) {
	for _, v := range []*prometheus.MetricVec{reconcileDuration.MetricVec, syncTotal.MetricVec, guardCondition.MetricVec, managedObjects.MetricVec, driftedObjects.MetricVec, syncStateObjects.MetricVec} {
		v.DeletePartialMatch(prometheus.Labels{"guard": guard})
	}
}

// setDrifted updates the drifted-objects gauge between reconciles.
func setDrifted(guard string, n int32) { driftedObjects.WithLabelValues(guard).Set(float64(n)) }

package audit

import (
	"errors"
	"sync"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

// The metrics are shared by every Logger of the process and registered once on
// controller-runtime's registry, which the manager serves on its metrics
// endpoint.
var (
	metricsOnce sync.Once

	recordsTotal = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "driftguard_audit_records_total",
		Help: "Audit records logged, by record type and action.",
	}, []string{"type", "action"})
	sinkErrorsTotal = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "driftguard_audit_sink_errors_total",
		Help: "Failed writes of a batch of audit records to a sink, retries included.",
	}, []string{"sink"})
	sinkFailedRecordsTotal = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "driftguard_audit_sink_failed_records_total",
		Help: "Audit records a sink did not take after its retries: a full buffer of the Event sink, a failed write, or still buffered when the drain time at shutdown ran out. The records are in the other sinks.",
	}, []string{"sink"})
	droppedTotal = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "driftguard_audit_dropped_total",
		Help: "Audit records that reached no sink and were written to the process log instead.",
	})
	queueLength = prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "driftguard_audit_queue_length",
		Help: "Audit records waiting to be written.",
	})
)

// registerMetrics registers the metrics on controller-runtime's registry the
// first time it is called. A collector already registered by someone else is
// used as it is.
func registerMetrics(log logr.Logger) {
	metricsOnce.Do(func() {
		recordsTotal = register(log, recordsTotal)
		sinkErrorsTotal = register(log, sinkErrorsTotal)
		sinkFailedRecordsTotal = register(log, sinkFailedRecordsTotal)
		droppedTotal = register(log, droppedTotal)
		queueLength = register(log, queueLength)
		decisionsTotal = register(log, decisionsTotal)
		deniedTotal = register(log, deniedTotal)
	})
}

func register[C prometheus.Collector](log logr.Logger, c C) C {
	if err := metrics.Registry.Register(c); err != nil {
		var are prometheus.AlreadyRegisteredError
		if errors.As(err, &are) {
			if existing, ok := are.ExistingCollector.(C); ok {
				return existing
			}
		}
		// A conflicting collector of another shape: keep ours unregistered
		// rather than fail the guard over a metric.
		log.Error(err, "audit metric not registered")
	}
	return c
}

package audit

import (
	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

// The metrics are shared by every Logger of the process and registered, as
// every package of the guard registers its metrics, on controller-runtime's
// registry when the package is loaded; the manager serves them on its
// metrics endpoint.
var (
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

func init() {
	metrics.Registry.MustRegister(recordsTotal, sinkErrorsTotal, sinkFailedRecordsTotal, droppedTotal, queueLength)
}

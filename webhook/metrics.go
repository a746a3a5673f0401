package webhook

import (
	"crypto/tls"
	"crypto/x509"
	"net/http"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

// Metrics of the webhook server, on the manager's metrics endpoint
// (docs/observability.md).
var (
	requestsTotal = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "driftguard_webhook_requests_total",
		Help: "Admission review requests answered, by webhook (validate, mutate) and HTTP status code; refused requests (413, 429) included.",
	}, []string{"webhook", "code"})
	requestDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "driftguard_webhook_request_duration_seconds",
		Help:    "Time from reading an admission review request's headers to writing its answer, by webhook (validate, mutate); waiting for a slot included.",
		Buckets: []float64{0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10},
	}, []string{"webhook"})
	// A vector without labels: the series appears once a certificate was
	// served, never as a zero that would read as long expired.
	certificateExpiry = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "driftguard_webhook_certificate_expiration_timestamp_seconds",
		Help: "When the serving certificate the webhook last presented expires, in seconds since the Unix epoch.",
	}, nil)
)

func init() { metrics.Registry.MustRegister(requestsTotal, requestDuration, certificateExpiry) }

// instrument counts and times the requests h answers as the webhook name.
func instrument(name string, h http.Handler) http.Handler {
	duration := requestDuration.WithLabelValues(name)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		sw := &statusWriter{ResponseWriter: w}
		h.ServeHTTP(sw, r)
		duration.Observe(time.Since(start).Seconds())
		code := sw.code
		if code == 0 {
			code = http.StatusOK
		}
		requestsTotal.WithLabelValues(name, strconv.Itoa(code)).Inc()
	})
}

// statusWriter remembers the status code written. Unwrap keeps
// http.ResponseController (the gate's read deadline) working through it.
type statusWriter struct {
	http.ResponseWriter
	code int
}

func (w *statusWriter) WriteHeader(code int) {
	if w.code == 0 {
		w.code = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(p []byte) (int, error) {
	if w.code == 0 {
		w.code = http.StatusOK
	}
	return w.ResponseWriter.Write(p)
}

func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// unwrapStatus returns the server's own writer under a statusWriter:
// http.MaxBytesReader tells the server through it to close a connection
// whose body ran over the limit, which a wrapper would hide.
func unwrapStatus(w http.ResponseWriter) http.ResponseWriter {
	if sw, ok := w.(*statusWriter); ok {
		return sw.ResponseWriter
	}
	return w
}

// observeCertificate records when c expires.
func observeCertificate(c *tls.Certificate) {
	if c == nil {
		return
	}
	leaf := c.Leaf
	if leaf == nil && len(c.Certificate) > 0 {
		var err error
		if leaf, err = x509.ParseCertificate(c.Certificate[0]); err != nil {
			return
		}
	}
	if leaf != nil {
		certificateExpiry.WithLabelValues().Set(float64(leaf.NotAfter.Unix()))
	}
}

// observed wraps get so that each certificate it serves is recorded.
func observed(get func(*tls.ClientHelloInfo) (*tls.Certificate, error)) func(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	return func(hello *tls.ClientHelloInfo) (*tls.Certificate, error) {
		c, err := get(hello)
		if err == nil {
			observeCertificate(c)
		}
		return c, err
	}
}

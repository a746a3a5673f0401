package app

import (
	"crypto/x509"
	"fmt"
	"net"
	"os"
	"strconv"

	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/driftguard/driftguard/webhook"
)

// EndpointOptions say who may call the webhook and how much it reads at
// once, and how the metrics are served (docs/security.md, "The webhook
// endpoint and metrics").
type EndpointOptions struct {
	// WebhookClientCAFile is a PEM file of CAs: when set, the webhook
	// requires a client certificate one of them signed (the API server's,
	// from its admission configuration) and refuses other connections
	// during the TLS handshake.
	WebhookClientCAFile string
	// WebhookClientNames, when set, are the names (common name or DNS name)
	// one of which the client certificate must carry.
	WebhookClientNames []string
	// WebhookMaxRequestBytes is the largest AdmissionReview read;
	// WebhookMaxBytesInFlight bounds the AdmissionReviews read or decided
	// at once (webhook.Limits).
	WebhookMaxRequestBytes  int64
	WebhookMaxBytesInFlight int64
	// MetricsSecure serves the metrics over HTTPS to clients whose bearer
	// token the API server authenticates (TokenReview) and authorizes to
	// get the path /metrics (SubjectAccessReview).
	MetricsSecure bool
}

func defaultEndpointOptions() EndpointOptions {
	return EndpointOptions{
		WebhookMaxRequestBytes:  webhook.DefaultMaxRequestBytes,
		WebhookMaxBytesInFlight: webhook.DefaultMaxBytesInFlight,
	}
}

func (o *EndpointOptions) bindFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.WebhookClientCAFile, "webhook-client-ca-file", o.WebhookClientCAFile, "PEM file of the CA(s) that sign the API server's client certificate for webhooks (its admission configuration's kubeConfigFile): the webhook then refuses, during the TLS handshake, every caller without such a certificate")
	fs.StringSliceVar(&o.WebhookClientNames, "webhook-client-names", o.WebhookClientNames, "with --webhook-client-ca-file: names (common name or DNS name) one of which the client certificate must carry")
	fs.Var((*quantity)(&o.WebhookMaxRequestBytes), "webhook-max-request-bytes", "largest AdmissionReview the webhook reads: a larger Content-Length is refused (413) unread, a longer body cut off (413)")
	fs.Var((*quantity)(&o.WebhookMaxBytesInFlight), "webhook-max-bytes-in-flight", "AdmissionReview bytes read or decided at once (by Content-Length; --webhook-max-request-bytes without one); more wait unread and are refused (429) at half the webhook's deadline")
	fs.BoolVar(&o.MetricsSecure, "metrics-secure", o.MetricsSecure, "serve --metrics-addr over HTTPS to callers whose bearer token the API server authenticates and authorizes to get /metrics (TokenReview and SubjectAccessReview); off: plain HTTP, keep --metrics-addr on loopback")
}

func (o *EndpointOptions) validate() error {
	if o.WebhookMaxRequestBytes <= 0 || o.WebhookMaxRequestBytes > webhook.MaxRequestBytesCeiling {
		return fmt.Errorf("--webhook-max-request-bytes: %d is outside 1..%d", o.WebhookMaxRequestBytes, webhook.MaxRequestBytesCeiling)
	}
	if o.WebhookMaxBytesInFlight < o.WebhookMaxRequestBytes {
		return fmt.Errorf("--webhook-max-bytes-in-flight (%d) is below --webhook-max-request-bytes (%d): a request of that size could never be read", o.WebhookMaxBytesInFlight, o.WebhookMaxRequestBytes)
	}
	if len(o.WebhookClientNames) > 0 && o.WebhookClientCAFile == "" {
		return fmt.Errorf("--webhook-client-names needs --webhook-client-ca-file")
	}
	if o.WebhookClientCAFile != "" {
		if _, err := o.webhookClientCAs(); err != nil {
			return err
		}
	}
	return nil
}

// webhookClientCAs reads --webhook-client-ca-file; nil when unset.
func (o *EndpointOptions) webhookClientCAs() (*x509.CertPool, error) {
	if o.WebhookClientCAFile == "" {
		return nil, nil
	}
	b, err := os.ReadFile(o.WebhookClientCAFile)
	if err != nil {
		return nil, fmt.Errorf("--webhook-client-ca-file: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(b) {
		return nil, fmt.Errorf("--webhook-client-ca-file %s: no PEM certificate in it", o.WebhookClientCAFile)
	}
	return pool, nil
}

// metricsOnLoopback reports whether addr is disabled ("0") or listens on a
// loopback address only.
func metricsOnLoopback(addr string) bool {
	if addr == "0" || addr == "" {
		return true
	}
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// quantity is a flag of a number of bytes written as a quantity (7Mi).
type quantity int64

func (q *quantity) String() string { return strconv.FormatInt(int64(*q), 10) }
func (q *quantity) Type() string   { return "quantity" }
func (q *quantity) Set(s string) error {
	v, err := resource.ParseQuantity(s)
	if err != nil {
		return err
	}
	n, ok := v.AsInt64()
	if !ok || n <= 0 {
		return fmt.Errorf("%q is not a positive number of bytes", s)
	}
	*q = quantity(n)
	return nil
}

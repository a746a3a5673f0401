package webhook

import (
	"context"
	"fmt"
	"log"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

// Limits bound the admission reviews one server reads and decides at once.
// A request waits for a slot and for its bytes before its body is read, so
// what waits costs a connection, not its body (docs/security.md, "The
// webhook endpoint and metrics").
type Limits struct {
	// MaxInFlight is how many requests are read or decided at once; more
	// wait, unread, until half the Deadline and are then refused with 429.
	MaxInFlight int
	// MaxRequestBytes is the largest body read: a larger Content-Length is
	// refused with 413 before anything is read, and a body without one is
	// cut off with 413 once it grows past it.
	MaxRequestBytes int64
	// MaxBytesInFlight bounds the bodies read or decided at once, each
	// counted by its Content-Length (MaxRequestBytes without one); a
	// request whose bytes do not fit waits like one without a slot.
	MaxBytesInFlight int64
	// Deadline bounds one request: waiting, reading its body and deciding.
	// Zero: the request's own context and the server's read timeout.
	Deadline time.Duration
}

// The kube-apiserver refuses a request body above 3 MiB, and etcd stores
// objects of 1.5 MiB by default: an AdmissionReview holds an object and its
// old version, as JSON, and the request's user and options.
const (
	// DefaultMaxRequestBytes is two of the API server's largest request
	// bodies and 1 MiB to spare.
	DefaultMaxRequestBytes int64 = 7 << 20
	// DefaultMaxBytesInFlight is about a dozen reviews of objects near the
	// API server's limit (decoding one takes several times its size).
	DefaultMaxBytesInFlight int64 = 32 << 20
	// DefaultMaxInFlight bounds requests read or decided at once.
	DefaultMaxInFlight = 256
	// MaxRequestBytesCeiling is the most MaxRequestBytes may be set to.
	MaxRequestBytesCeiling int64 = 64 << 20
)

// withDefaults fills the limits left at zero.
func (l Limits) withDefaults() Limits {
	if l.MaxInFlight <= 0 {
		l.MaxInFlight = DefaultMaxInFlight
	}
	if l.MaxRequestBytes <= 0 {
		l.MaxRequestBytes = DefaultMaxRequestBytes
	}
	if l.MaxBytesInFlight <= 0 {
		l.MaxBytesInFlight = max(DefaultMaxBytesInFlight, l.MaxRequestBytes)
	}
	return l
}

// Validate checks that one request fits in the bytes in flight.
func (l Limits) Validate() error {
	l = l.withDefaults()
	if l.MaxRequestBytes > MaxRequestBytesCeiling {
		return fmt.Errorf("webhook request limit %d bytes is above the ceiling of %d", l.MaxRequestBytes, MaxRequestBytesCeiling)
	}
	if l.MaxRequestBytes > l.MaxBytesInFlight {
		return fmt.Errorf("webhook request limit (%d bytes) is above the bytes in flight (%d): no request of that size could ever be read", l.MaxRequestBytes, l.MaxBytesInFlight)
	}
	return nil
}

var refused = prometheus.NewCounterVec(prometheus.CounterOpts{
	Name: "driftguard_webhook_refused_total",
	Help: "Admission requests the webhook server refused before reading them whole, by reason: too-large (413) or overloaded (429; the API server applies the failure policy).",
}, []string{"reason"})

func init() { metrics.Registry.MustRegister(refused) }

// gate admits a request to the handlers once it has a slot and its bytes.
type gate struct {
	limits Limits
	slots  chan struct{}
	bytes  *budget
	log    logr.Logger
}

func newGate(l Limits, log logr.Logger) (*gate, error) {
	if err := l.Validate(); err != nil {
		return nil, err
	}
	l = l.withDefaults()
	return &gate{limits: l, slots: make(chan struct{}, l.MaxInFlight), bytes: newBudget(l.MaxBytesInFlight), log: log}, nil
}

func (g *gate) wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.ContentLength > g.limits.MaxRequestBytes {
			g.refuse(w, r, http.StatusRequestEntityTooLarge, "too-large",
				fmt.Sprintf("driftguard: a body of %d bytes is above the limit of %d (--webhook-max-request-bytes)", r.ContentLength, g.limits.MaxRequestBytes))
			return
		}
		ctx, wait := r.Context(), r.Context()
		if d := g.limits.Deadline; d > 0 {
			var cancel, cancelWait context.CancelFunc
			ctx, cancel = context.WithTimeout(ctx, d)
			defer cancel()
			wait, cancelWait = context.WithTimeout(ctx, d/2)
			defer cancelWait()
			// A body that trickles in holds its slot no longer than the
			// request may take (HTTP/1 and HTTP/2 both support this).
			_ = http.NewResponseController(w).SetReadDeadline(time.Now().Add(d))
		}
		select {
		case g.slots <- struct{}{}:
		case <-wait.Done():
			g.refuse(w, r, http.StatusTooManyRequests, "overloaded",
				fmt.Sprintf("driftguard: %d admission reviews in flight (--webhook-max-in-flight); try again", g.limits.MaxInFlight))
			return
		}
		defer func() { <-g.slots }()
		n := r.ContentLength
		if n < 0 {
			n = g.limits.MaxRequestBytes // unknown length: the most it may grow to
		}
		if !g.bytes.acquire(wait, n) {
			g.refuse(w, r, http.StatusTooManyRequests, "overloaded",
				fmt.Sprintf("driftguard: %d bytes of admission reviews in flight (--webhook-max-bytes-in-flight); try again", g.limits.MaxBytesInFlight))
			return
		}
		defer g.bytes.release(n)
		r.Body = http.MaxBytesReader(unwrapStatus(w), r.Body, g.limits.MaxRequestBytes)
		next.ServeHTTP(w, r.WithContext(ctx))
	})
}

// refuse answers without reading the body. An HTTP/1 connection is closed
// so that the server does not read the body either; an HTTP/2 stream is
// reset on its own (there, Connection: close would end the API server's
// connection, which carries other reviews).
func (g *gate) refuse(w http.ResponseWriter, r *http.Request, code int, reason, msg string) {
	refused.WithLabelValues(reason).Inc()
	g.log.V(1).Info("admission request refused", "reason", reason, "remote", r.RemoteAddr, "contentLength", r.ContentLength)
	if r.ProtoMajor == 1 {
		w.Header().Set("Connection", "close")
	}
	if code == http.StatusTooManyRequests {
		w.Header().Set("Retry-After", "1")
	}
	http.Error(w, msg, code)
}

// budget is a number of bytes shared by requests; acquire waits until n
// are free or ctx ends.
type budget struct {
	mu    sync.Mutex
	free  int64
	freed chan struct{} // closed, and replaced, whenever bytes are released
}

func newBudget(n int64) *budget { return &budget{free: n, freed: make(chan struct{})} }

func (b *budget) acquire(ctx context.Context, n int64) bool {
	for {
		b.mu.Lock()
		if b.free >= n {
			b.free -= n
			b.mu.Unlock()
			return true
		}
		freed := b.freed
		b.mu.Unlock()
		select {
		case <-freed:
		case <-ctx.Done():
			return false
		}
	}
}

func (b *budget) release(n int64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.free += n
	close(b.freed)
	b.freed = make(chan struct{})
}

// newErrorLog sends the HTTP server's own messages (refused TLS
// handshakes: no or a wrong client certificate) to log at debug level.
func newErrorLog(l logr.Logger) *log.Logger {
	return log.New(errorLogWriter{l}, "", 0)
}

type errorLogWriter struct{ l logr.Logger }

func (w errorLogWriter) Write(p []byte) (int, error) {
	w.l.V(1).Info("webhook server", "message", strings.TrimSpace(string(p)))
	return len(p), nil
}

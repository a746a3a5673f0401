// Package notify tells people and Git hosts what the guard did. It is an
// audit sink, so it sees every record in order. Chat providers (Slack,
// Teams) and the generic JSON POST (optionally HMAC-signed) hear of what
// needs a person: a sync failed, a Guard became Degraded, or drift was
// found; routine records (applies, decisions, reverts, successful syncs)
// never notify them, and each kind of event notifies at most once a period
// per Guard, counting what it held back. Commit-status providers (GitHub,
// GitLab) mark each revision a Guard applied or failed to apply, once per
// revision and result.
package notify

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/driftguard/driftguard/audit"
	"github.com/driftguard/driftguard/decision"
	"github.com/driftguard/driftguard/health"
	"github.com/driftguard/driftguard/redact"
)

// Kinds of notifications.
const (
	SyncFailed = "sync-failed"
	Degraded   = "degraded"
	Drift      = "drift"
)

// Notification is the JSON body of one POST.
type Notification struct {
	Kind    string    `json:"kind"`
	Guard   string    `json:"guard"`
	Time    time.Time `json:"time"`
	Summary string    `json:"summary"`
	// Object the event is about, when it is about one.
	Object string `json:"object,omitempty"`
	// Revision and file in Git, when known.
	Source *audit.Source `json:"source,omitempty"`
	// Fields that drifted (redacted as in the audit record).
	Fields []audit.Field `json:"fields,omitempty"`
	// Suppressed counts events of this kind and Guard held back since the
	// last notification (rate limit).
	Suppressed int `json:"suppressed,omitempty"`
}

// Of returns the notification a record calls for, if any.
func Of(r audit.Record) (Notification, bool) {
	n := Notification{Guard: r.Guard, Time: r.Time}
	if r.Source != nil {
		src := *r.Source
		src.URL = redact.URL(src.URL) // the Logger did, unless r comes from elsewhere
		n.Source = &src
	}
	if r.Object.Name != "" {
		n.Object = r.Object.String()
	}
	switch {
	case r.Type == audit.Drift && !r.DryRun:
		n.Kind, n.Fields = Drift, r.Fields
		n.Summary = fmt.Sprintf("%s drifted from Git (changed by %s); action: %s", n.Object, orUnknown(r.User), r.Action)
	case r.Type == audit.Error && (r.Operation == "SYNC" || r.Operation == "RENDER"):
		n.Kind = SyncFailed
		n.Summary = fmt.Sprintf("guard %s: sync failed: %s", r.Guard, firstOf(r.Error, r.Reason))
	case r.Type == audit.Health && r.Action == string(health.Degraded):
		n.Kind = Degraded
		n.Summary = fmt.Sprintf("guard %s is Degraded: %s", r.Guard, r.Reason)
	case r.Type == audit.Error && r.Rule == decision.RuleFightDetected:
		n.Kind = Degraded
		n.Summary = fmt.Sprintf("guard %s is Degraded: %s", r.Guard, r.Reason)
	default:
		return Notification{}, false
	}
	return n, true
}

func orUnknown(s string) string {
	if s == "" {
		return "unknown"
	}
	return s
}

func firstOf(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

var sent = prometheus.NewCounterVec(prometheus.CounterOpts{
	Name: "driftguard_notifications_total",
	Help: "Notifications by kind and result: sent, failed (the receiver did not take it), suppressed (rate limit).",
}, []string{"kind", "result"})

func init() { metrics.Registry.MustRegister(sent) }

// Sink is an audit.Sink that sends notifications to one provider: chat
// messages or a generic JSON POST for what needs a person, or a commit
// status for each revision applied or failed.
type Sink struct {
	// Config returns the provider and its settings (read from a Secret,
	// which may change). When nil, URL is used with the generic provider.
	Config func(ctx context.Context) (Config, error)
	// URL returns where to post generic notifications; "" disables sending.
	URL func(ctx context.Context) (string, error)
	// Period: at most one notification of a kind per Guard in it.
	Period time.Duration
	Client *http.Client
	Log    logr.Logger

	mu     sync.Mutex
	last   map[string]time.Time // guard/kind -> last sent
	held   map[string]int       // guard/kind -> suppressed since
	status map[string]string    // guard and repository -> revision/result last set
}

var _ audit.Sink = (*Sink)(nil)

// Name implements audit.Sink.
func (s *Sink) Name() string { return "notify" }

// Close implements audit.Sink.
func (s *Sink) Close() error { return nil }

// config returns the provider in force.
func (s *Sink) config(ctx context.Context) (Config, error) {
	if s.Config != nil {
		return s.Config(ctx)
	}
	raw, err := s.URL(ctx)
	return Config{Provider: Generic, Address: raw}, err
}

// Write implements audit.Sink: it posts what the records call for. A
// receiver that fails is logged and counted; records are never retried into
// a flood of late notifications.
func (s *Sink) Write(ctx context.Context, batch []audit.Record) error {
	for _, r := range batch {
		c, cerr := s.config(ctx)
		if cerr == nil && c.commitStatus() {
			s.setStatus(ctx, c, r)
			continue
		}
		n, ok := Of(r)
		if !ok || !s.admit(&n) {
			continue
		}
		host, err := "", cerr
		if err == nil {
			host, err = s.post(ctx, c, n)
		}
		if err != nil {
			sent.WithLabelValues(n.Kind, "failed").Inc()
			// The URL itself is a secret (a Slack or Teams webhook): only
			// its host is logged, and err never holds more.
			s.Log.Error(err, "notification not delivered", "kind", n.Kind, "guard", n.Guard, "host", host)
			continue
		}
		if host != "" {
			sent.WithLabelValues(n.Kind, "sent").Inc()
		}
	}
	return nil
}

// setStatus sets the commit status a record calls for, once for each
// revision and result of a Guard: a revision that fails at every retry
// gets one status, and another when it is applied at last.
func (s *Sink) setStatus(ctx context.Context, c Config, r audit.Record) {
	st, ok := StatusOf(r)
	if !ok {
		return
	}
	key, val := st.Guard+" "+st.Repo, st.Revision+"/"+st.Result
	s.mu.Lock()
	same := s.status[key] == val
	s.mu.Unlock()
	if same {
		return
	}
	method, target, body, header, err := statusRequest(c, st)
	host := hostOf(c.apiURL())
	if err == nil {
		err = s.send(ctx, method, target, redact.Secrets.Bytes(body), header)
	}
	if err != nil {
		sent.WithLabelValues(CommitStatus, "failed").Inc()
		s.Log.Error(err, "commit status not set", "provider", c.Provider, "guard", st.Guard, "revision", st.Revision, "result", st.Result, "host", host)
		return
	}
	s.mu.Lock()
	if s.status == nil {
		s.status = map[string]string{}
	}
	s.status[key] = val
	s.mu.Unlock()
	sent.WithLabelValues(CommitStatus, "sent").Inc()
}

// admit applies the rate limit and fills in the suppressed count.
func (s *Sink) admit(n *Notification) bool {
	key := n.Guard + "/" + n.Kind
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.last == nil {
		s.last, s.held = map[string]time.Time{}, map[string]int{}
	}
	period := s.Period
	if period <= 0 {
		period = time.Minute
	}
	if last, ok := s.last[key]; ok && n.Time.Sub(last) < period {
		s.held[key]++
		sent.WithLabelValues(n.Kind, "suppressed").Inc()
		return false
	}
	s.last[key] = n.Time
	n.Suppressed = s.held[key]
	delete(s.held, key)
	return true
}

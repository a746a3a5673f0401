package audit

import (
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

// Labels whose values others choose are capped: usernames are chosen by
// whoever can create identities (a namespace editor can create service
// accounts), and a custom Rego policy may answer any rule, even one made
// of the request. The first maxLabelValues values of such a label keep
// their own series; later ones share Other. The audit records name every
// user and rule.
const maxLabelValues = 100

// maxRuleLength bounds the rule label: a longer rule counts as Other.
const maxRuleLength = 128

// Other is the value of a capped label past its first maxLabelValues values.
const Other = "(other)"

var (
	decisionsTotal = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "driftguard_admission_decisions_total",
		Help: "Admission decisions recorded, by action (deny, warn, allow, revert) and policy rule; rules past the first 100 share the rule \"(other)\".",
	}, []string{"action", "rule"})
	deniedTotal = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "driftguard_admission_denied_total",
		Help: "Admission requests denied, by user; users past the first 100 denied share the user \"(other)\".",
	}, []string{"user"})

	decisionRules = newCappedLabel()
	deniedUsers   = newCappedLabel()
)

func init() { metrics.Registry.MustRegister(decisionsTotal, deniedTotal) }

// countDecision counts a decision record by action and rule, and a denial
// by its user.
func countDecision(r *Record) {
	if r.Type != Decision {
		return
	}
	rule := Other
	if len(r.Rule) <= maxRuleLength {
		rule = decisionRules.value(r.Rule)
	}
	decisionsTotal.WithLabelValues(r.Action, rule).Inc()
	if r.Action == "deny" {
		deniedTotal.WithLabelValues(deniedUsers.value(r.User)).Inc()
	}
}

// cappedLabel hands out the values of one label: the first maxLabelValues
// distinct values keep their own, later ones get Other.
type cappedLabel struct {
	mu   sync.Mutex
	seen map[string]bool
}

func newCappedLabel() *cappedLabel { return &cappedLabel{seen: map[string]bool{}} }

// value is the label value that stands for v.
func (c *cappedLabel) value(v string) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.seen[v] {
		return v
	}
	if len(c.seen) >= maxLabelValues {
		return Other
	}
	c.seen[v] = true
	return v
}

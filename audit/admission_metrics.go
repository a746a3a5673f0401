package audit

import (
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

// maxDeniedUsers bounds the user label of driftguard_admission_denied_total.
// Usernames are chosen by whoever can create identities (a namespace editor
// can create service accounts), so the series are capped: the first
// maxDeniedUsers users denied keep their own series, later ones share
// OtherUsers. The audit records name every user.
const maxDeniedUsers = 100

// OtherUsers is the user label of denials past the first maxDeniedUsers users.
const OtherUsers = "(other)"

var (
	decisionsTotal = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "driftguard_admission_decisions_total",
		Help: "Admission decisions recorded, by action (deny, warn, allow, revert) and policy rule.",
	}, []string{"action", "rule"})
	deniedTotal = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "driftguard_admission_denied_total",
		Help: "Admission requests denied, by user; users past the first 100 denied share the user \"(other)\".",
	}, []string{"user"})

	deniedUsersMu sync.Mutex
	deniedUsers   = map[string]bool{}
)

func init() { metrics.Registry.MustRegister(decisionsTotal, deniedTotal) }

// countDecision counts a decision record by action and rule, and a denial
// by its user.
func countDecision(r *Record) {
	if r.Type != Decision {
		return
	}
	decisionsTotal.WithLabelValues(r.Action, r.Rule).Inc()
	if r.Action == "deny" {
		deniedTotal.WithLabelValues(deniedUserLabel(r.User)).Inc()
	}
}

func deniedUserLabel(user string) string {
	deniedUsersMu.Lock()
	defer deniedUsersMu.Unlock()
	if deniedUsers[user] {
		return user
	}
	if len(deniedUsers) >= maxDeniedUsers {
		return OtherUsers
	}
	deniedUsers[user] = true
	return user
}

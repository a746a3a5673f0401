// Package promrules evaluates the chart's Prometheus alerts and Grafana
// dashboards with Prometheus's own query engine and rule evaluator over
// what a running guard exposes on its metrics endpoint while it meets
// drift, denials, a fight, failing syncs, an audit sink on a full disk and
// malformed admission reviews (docs/observability.md, Testing the rules).
package promrules

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/driftguard/driftguard/app"
	"github.com/driftguard/driftguard/test/harness"
)

var (
	h *harness.Harness
	// metricsURL is the guard's /metrics endpoint (plain HTTP on loopback:
	// --metrics-secure is off in the harness).
	metricsURL string
)

func TestMain(m *testing.M) { os.Exit(run(m)) }

func run(m *testing.M) int {
	dir, err := os.MkdirTemp("", "driftguard-promrules-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	if err := harness.WriteDefaultPolicy(dir, nil); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	// The audit file sink writes to a full disk: every write fails with
	// ENOSPC, so the audit sink alert has something to fire on.
	fullDisk := filepath.Join(dir, "audit.log")
	if err := os.Symlink("/dev/full", fullDisk); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	port, err := harness.FreePort()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	metricsURL = fmt.Sprintf("http://127.0.0.1:%d/metrics", port)
	h, err = harness.Start(harness.Options{Guard: func(o *app.Options) {
		o.PolicyDir = dir
		o.MetricsAddr = fmt.Sprintf("127.0.0.1:%d", port)
		o.AuditFile = fullDisk
	}})
	if err != nil {
		fmt.Fprintln(os.Stderr, "start harness:", err)
		return 1
	}
	defer h.Stop()
	return m.Run()
}

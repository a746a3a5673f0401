package app

import (
	"fmt"
	"io"

	"github.com/go-logr/logr"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/driftguard/driftguard/audit"
	"github.com/driftguard/driftguard/notify"
)

// newAuditLog is the audit log and its sinks (--audit-stdout to out,
// --audit-file, --audit-events, --notify-secret, --audit-otlp-endpoint), run by
// the manager.
func newAuditLog(mgr manager.Manager, cfg *rest.Config, o Options, out io.Writer, log logr.Logger) (*audit.Logger, error) {
	sinks := []audit.Sink{}
	if o.AuditStdout {
		sinks = append(sinks, audit.NewWriterSink("stdout", out))
	}
	if o.AuditFile != "" {
		fs, err := audit.OpenFileSink(o.AuditFile, o.AuditFileMaxMB, o.AuditFileBackups)
		if err != nil {
			return nil, fmt.Errorf("--audit-file: %w", err)
		}
		sinks = append(sinks, fs)
	}
	if o.AuditEvents {
		events, err := eventSink(cfg, o)
		if err != nil {
			return nil, err
		}
		sinks = append(sinks, events)
	}
	for _, name := range notifySecrets(o.NotifySecret) {
		n := &notify.Sink{Config: notify.SecretConfig(mgr.GetAPIReader(), o.Namespace, name), Period: o.NotifyPeriod, Log: log.WithName("notify").WithValues("secret", name)}
		sinks = append(sinks, audit.NewAsyncSink(n, 256, 1, o.AuditDrainTimeout))
	}
	otlp, err := o.otlpSink()
	if err != nil {
		return nil, err
	}
	if otlp != nil {
		sinks = append(sinks, audit.NewAsyncSink(otlp, o.AuditOTLPBuffer, 1, o.AuditDrainTimeout))
	}
	auditLog := audit.NewLogger(log.WithName("audit"), o.AuditQueueSize, sinks...)
	if err := mgr.Add(auditLog); err != nil {
		return nil, err
	}
	return auditLog, nil
}

// eventSink records as Kubernetes Events. Events get a client of their own
// with a small rate limit, so that a burst of records never starves reverts
// of API calls.
func eventSink(cfg *rest.Config, o Options) (audit.Sink, error) {
	evCfg := rest.CopyConfig(cfg)
	evCfg.QPS, evCfg.Burst = 20, 50
	evKube, err := kubernetes.NewForConfig(evCfg)
	if err != nil {
		return nil, fmt.Errorf("events client: %w", err)
	}
	return audit.NewAsyncSink(audit.NewEventSink(evKube, "driftguard"), 1024, 4, o.AuditDrainTimeout), nil
}

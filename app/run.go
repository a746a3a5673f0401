package app

import (
	"context"
	"fmt"
	"io"
	"os"

	"github.com/go-logr/logr"
	authenticationv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/driftguard/driftguard/render"
)

// Run starts the guard against the cluster of cfg and blocks until ctx ends.
// Audit records written to stdout go to out (os.Stdout when nil).
func Run(ctx context.Context, cfg *rest.Config, o Options, log logr.Logger, out io.Writer) error {
	if err := o.Validate(); err != nil {
		return err
	}
	render.SetLimits(o.RenderLimits)
	if out == nil {
		out = os.Stdout
	}
	cfg = rest.CopyConfig(cfg)
	cfg.QPS, cfg.Burst = o.KubeAPIQPS, o.KubeAPIBurst
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return fmt.Errorf("kubernetes client: %w", err)
	}
	// Who the guard is: its own writes are always allowed by policy.
	self, err := whoAmI(ctx, kube)
	if err != nil {
		return err
	}
	log.Info("guard identity", "user", self)
	events := &relay{}
	// The webhook's serving certificate also serves the metrics under
	// --metrics-secure, and its key signs stamps.
	serving, keeper, err := certificates(ctx, kube, o, events.caBundleChanged, log.WithName("certs"))
	if err != nil {
		return err
	}
	mgr, err := newManager(cfg, o, serving, log)
	if err != nil {
		return err
	}
	if keeper != nil {
		if err := mgr.Add(keeper); err != nil {
			return err
		}
	}
	auditLog, err := newAuditLog(mgr, cfg, o, out, log)
	if err != nil {
		return err
	}
	engine, err := newPolicyEngine(mgr, o, self, auditLog, log)
	if err != nil {
		return err
	}
	d := deps{mgr: mgr, cfg: cfg, kube: kube, o: o, self: self, serving: serving, engine: engine, audit: auditLog, events: events, log: log}
	c, err := newControllers(ctx, d)
	if err != nil {
		return err
	}
	if err := addAdmission(d, c); err != nil {
		return err
	}
	if err := addHealthChecks(mgr); err != nil {
		return err
	}
	log.Info("starting driftguard", "webhook", o.WebhookAddr, "policy", engine.Revision())
	err = mgr.Start(ctx)
	if cerr := auditLog.Close(); cerr != nil {
		log.Error(cerr, "close audit log")
	}
	return err
}

// addHealthChecks answers the liveness and readiness probes.
func addHealthChecks(mgr manager.Manager) error {
	if err := mgr.AddHealthzCheck("ping", healthz.Ping); err != nil {
		return err
	}
	return mgr.AddReadyzCheck("ping", healthz.Ping)
}

func whoAmI(ctx context.Context, kube kubernetes.Interface) (string, error) {
	r, err := kube.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
	if err != nil {
		return "", fmt.Errorf("find the guard's own identity (SelfSubjectReview): %w", err)
	}
	return r.Status.UserInfo.Username, nil
}

// nonLeader runs fn on every replica.
type nonLeader func(ctx context.Context) error

func (f nonLeader) Start(ctx context.Context) error { return f(ctx) }
func (f nonLeader) NeedLeaderElection() bool        { return false }

package app

import (
	"crypto/tls"
	"fmt"
	"time"

	"github.com/spf13/pflag"
)

// InstallOptions are the settings of a guard installed in a cluster:
// self-protection, the webhook's certificates, leader election timing.
// docs/install.md explains them.
type InstallOptions struct {
	// SelfProtect restores the webhook configurations when someone deletes
	// or changes them, and records changes to the guard's Deployment and
	// Guards.
	SelfProtect bool
	// DeploymentName is the guard's own Deployment in --namespace: its
	// changes are recorded, and while it is gone (uninstall) a deleted
	// webhook configuration is not restored.
	DeploymentName string

	// CertSecret is the Secret in --namespace where the guard keeps (creates,
	// rotates) the webhook's CA and serving certificate, shared by replicas.
	CertSecret string
	// CertLifetime and CALifetime are the lifetimes of new certificates;
	// each is renewed at two thirds of its life.
	CertLifetime time.Duration
	CALifetime   time.Duration
	// TLSMinVersion is "1.2" or "1.3".
	TLSMinVersion string

	// LeaseDuration, RenewDeadline and RetryPeriod time the leader election
	// (--leader-elect): a new leader takes over at most LeaseDuration after
	// the last one stopped renewing.
	LeaseDuration, RenewDeadline, RetryPeriod time.Duration
}

func defaultInstallOptions() InstallOptions {
	return InstallOptions{
		SelfProtect:   true,
		CertLifetime:  90 * 24 * time.Hour,
		CALifetime:    5 * 365 * 24 * time.Hour,
		TLSMinVersion: "1.3",
		LeaseDuration: 15 * time.Second,
		RenewDeadline: 10 * time.Second,
		RetryPeriod:   2 * time.Second,
	}
}

func (o *InstallOptions) bindFlags(fs *pflag.FlagSet) {
	fs.BoolVar(&o.SelfProtect, "self-protect", o.SelfProtect, "restore the webhook configurations at once when someone deletes or changes them, and record who changed them, the guard's Deployment or a Guard")
	fs.StringVar(&o.DeploymentName, "deployment-name", o.DeploymentName, "the guard's own Deployment in --namespace: changes to it are recorded; while it is gone (helm uninstall) deleted webhook configurations are not restored")
	fs.StringVar(&o.CertSecret, "cert-secret", o.CertSecret, "Secret in --namespace where the guard creates, shares and rotates the webhook's CA and serving certificate (instead of --cert-dir)")
	fs.DurationVar(&o.CertLifetime, "cert-lifetime", o.CertLifetime, "lifetime of a serving certificate made for --cert-secret; renewed at two thirds of it")
	fs.DurationVar(&o.CALifetime, "ca-lifetime", o.CALifetime, "lifetime of a CA made for --cert-secret; renewed at two thirds of it, trusted alongside the old one until certificates it signed are served")
	fs.StringVar(&o.TLSMinVersion, "tls-min-version", o.TLSMinVersion, "lowest TLS version the webhook accepts: 1.2 or 1.3")
	fs.DurationVar(&o.LeaseDuration, "leader-elect-lease-duration", o.LeaseDuration, "how long a leader's lease is valid: the longest a new leader waits after the last one died")
	fs.DurationVar(&o.RenewDeadline, "leader-elect-renew-deadline", o.RenewDeadline, "how long the leader tries to renew its lease before it stops leading (less than the lease duration)")
	fs.DurationVar(&o.RetryPeriod, "leader-elect-retry-period", o.RetryPeriod, "how often candidates try to acquire, and the leader to renew, the lease")
}

func (o *InstallOptions) validate() error {
	if _, err := o.tlsMinVersion(); err != nil {
		return err
	}
	if o.RetryPeriod <= 0 || o.RenewDeadline <= o.RetryPeriod*6/5 || o.LeaseDuration <= o.RenewDeadline {
		return fmt.Errorf("--leader-elect-lease-duration (%s) must be longer than --leader-elect-renew-deadline (%s), which must be longer than 1.2 times --leader-elect-retry-period (%s)",
			o.LeaseDuration, o.RenewDeadline, o.RetryPeriod)
	}
	if o.CertSecret != "" && (o.CertLifetime <= 0 || o.CALifetime < o.CertLifetime) {
		return fmt.Errorf("--cert-lifetime (%s) must be positive and --ca-lifetime (%s) at least as long", o.CertLifetime, o.CALifetime)
	}
	return nil
}

func (o *InstallOptions) tlsMinVersion() (uint16, error) {
	switch o.TLSMinVersion {
	case "1.2":
		return tls.VersionTLS12, nil
	case "1.3", "":
		return tls.VersionTLS13, nil
	}
	return 0, fmt.Errorf("--tls-min-version: %q is neither 1.2 nor 1.3", o.TLSMinVersion)
}

package app

import (
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
}

func defaultInstallOptions() InstallOptions {
	return InstallOptions{SelfProtect: true}
}

func (o *InstallOptions) bindFlags(fs *pflag.FlagSet) {
	fs.BoolVar(&o.SelfProtect, "self-protect", o.SelfProtect, "restore the webhook configurations at once when someone deletes or changes them, and record who changed them, the guard's Deployment or a Guard")
	fs.StringVar(&o.DeploymentName, "deployment-name", o.DeploymentName, "the guard's own Deployment in --namespace: changes to it are recorded; while it is gone (helm uninstall) deleted webhook configurations are not restored")
}

func (o *InstallOptions) validate() error {
	return nil
}

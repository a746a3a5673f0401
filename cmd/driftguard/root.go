package main

import (
	"flag"
	"os"

	"github.com/go-logr/logr"
	"github.com/spf13/cobra"
	"go.uber.org/zap/zapcore"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/driftguard/driftguard/redact"
)

// logOptions are the zap flags shared by every subcommand that logs.
type logOptions struct {
	zap zap.Options
}

func (o *logOptions) bind(cmd *cobra.Command) {
	o.zap = zap.Options{Development: false, Level: zapcore.InfoLevel}
	fs := flag.NewFlagSet("zap", flag.ContinueOnError)
	o.zap.BindFlags(fs)
	cmd.PersistentFlags().AddGoFlagSet(fs)
}

// logger builds the logr logger (zap, JSON on stderr) and sets it for controller-runtime.
func (o *logOptions) logger() logr.Logger {
	// Every line the process logs is scrubbed of the secret values it
	// knows (redact.Secrets): errors of the API server and of renders may
	// quote them.
	o.zap.DestWriter = redact.Secrets.Writer(os.Stderr)
	l := zap.New(zap.UseFlagOptions(&o.zap))
	ctrl.SetLogger(l)
	return l
}

func newRootCommand() *cobra.Command {
	logs := &logOptions{}
	root := &cobra.Command{
		Use:           "driftguard",
		Short:         "Keep a Kubernetes cluster equal to Git, and stop people from quietly making it different",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	logs.bind(root)
	root.AddCommand(newRunCommand(logs), newDevCommand(logs), newPolicyCommand(), newDiffCommand(), newAuditCommand(), newHealthCommand(), newVersionCommand())
	root.AddCommand(newAdoptCommand())
	root.AddCommand(newRollbackCommand())
	root.AddCommand(newSyncCommand())
	root.AddCommand(newValidateCommand())
	root.AddCommand(newPushCommand())
	root.AddCommand(newGetCommand(), newReconcileCommand(), newSuspendCommand(), newResumeCommand(), newTreeCommand(), newEventsCommand(), newLogsCommand())
	return root
}

// Package e2e drives the guard end to end on a real kube-apiserver and etcd,
// a real Git server on loopback, and real kubectl, with the admission webhook
// registered.
package e2e

import (
	"fmt"
	"net/http/httptest"
	"os"
	"testing"

	"github.com/driftguard/driftguard/app"
	"github.com/driftguard/driftguard/test/harness"
)

var (
	h         *harness.Harness
	policyDir string
)

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	var err error
	policyDir, err = os.MkdirTemp("", "driftguard-policy-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(policyDir)
	stopTLS, err := startGitTLS()
	if err != nil {
		fmt.Fprintln(os.Stderr, "HTTPS server:", err)
		return 1
	}
	defer stopTLS()
	if err := harness.WriteDefaultPolicy(policyDir, nil); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	notifications = &notificationReceiver{}
	notifySrv := httptest.NewServer(notifications)
	defer notifySrv.Close()
	statuses = newStatusAPI()
	statusSrv := httptest.NewServer(statuses)
	defer statusSrv.Close()
	h, err = harness.Start(harness.Options{Guard: func(o *app.Options) {
		o.PolicyDir = policyDir
		o.BreakGlassGroups = []string{"sre"}
		o.NotifySecret = notifySecret + "," + statusSecret
	}})
	if err != nil {
		fmt.Fprintln(os.Stderr, "start harness:", err)
		return 1
	}
	defer h.Stop()
	if err := createNotifySecret(notifySrv.URL); err != nil {
		fmt.Fprintln(os.Stderr, "notification secret:", err)
		return 1
	}
	if err := createStatusSecret(statusSrv.URL); err != nil {
		fmt.Fprintln(os.Stderr, "commit status secret:", err)
		return 1
	}
	return m.Run()
}

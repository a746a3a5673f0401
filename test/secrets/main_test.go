// Package secrets shows, on a real kube-apiserver and etcd, a real Git
// server on loopback and real kubectl, that a value that comes from a
// Secret or a SOPS-encrypted file never leaves the guard in clear: not in
// audit records (stdout, file), Kubernetes Events, notifications, the
// webhook's denial and warning messages, a Guard's status, the process log
// or the output of driftguard diff (docs/security.md, "Secret values never
// leave").
package secrets

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/driftguard/driftguard/app"
	"github.com/driftguard/driftguard/test/harness"
)

const notifySecret = "driftguard-notify"

var (
	h             *harness.Harness
	notifications *receiver
)

// receiver keeps every byte posted to it.
type receiver struct {
	mu     sync.Mutex
	bodies [][]byte
}

func (r *receiver) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	b, _ := io.ReadAll(req.Body)
	r.mu.Lock()
	r.bodies = append(r.bodies, b)
	r.mu.Unlock()
}

func (r *receiver) all() [][]byte {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([][]byte(nil), r.bodies...)
}

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	policyDir, err := os.MkdirTemp("", "driftguard-policy-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(policyDir)
	if err := harness.WriteDefaultPolicy(policyDir, nil); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	notifications = &receiver{}
	srv := httptest.NewServer(notifications)
	defer srv.Close()
	h, err = harness.Start(harness.Options{Guard: func(o *app.Options) {
		o.PolicyDir = policyDir
		o.NotifySecret = notifySecret
	}})
	if err != nil {
		fmt.Fprintln(os.Stderr, "start harness:", err)
		return 1
	}
	defer h.Stop()
	ctx := context.Background()
	if err := h.Admin.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "driftguard-system"}}); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if err := h.Admin.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "driftguard-system", Name: notifySecret},
		StringData: map[string]string{"address": srv.URL}}); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return m.Run()
}

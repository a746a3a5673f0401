package install

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"github.com/driftguard/driftguard/certs"
	"github.com/driftguard/driftguard/test/wait"
)

// TestCertificateRotationUnderLoad: the guard keeps its CA and serving
// certificate in a Secret with short lifetimes, so both rotate several times
// while admission requests flow through the real API server. With
// failurePolicy Fail every request the webhook does not answer fails, and
// none may: each is either admitted (a field Git does not set) or denied by
// the policy (a field Git sets). New TLS connections made with the CA bundle
// registered at that moment verify the certificate served, as the API
// server's would.
func TestCertificateRotationUnderLoad(t *testing.T) {
	e := newEnv(t)
	files := map[string]string{"ns.yaml": "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: load\n"}
	const objects = 4
	for i := range objects {
		files[fmt.Sprintf("cm%d.yaml", i)] = fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm%d\n  namespace: load\ndata:\n  value: git\n", i)
	}
	e.guard("load", files)
	g := e.startGuard("guard", "--cert-secret", "webhook-tls", "--cert-lifetime", "4s", "--ca-lifetime", "12s", "--failure-policy", "Fail")
	e.waitValue(60*time.Second, "git", "configmap", "cm0", "-n", "load", "-o", "jsonpath={.data.value}")
	alice, err := kubernetes.NewForConfig(e.alice)
	if err != nil {
		t.Fatal(err)
	}
	// The webhook answers before the load starts.
	wait.Eventually(t, 30*time.Second, "webhook denies a change to Git's field", func() error {
		err := patch(alice, "cm0", `{"data":{"value":"hand"}}`, true)
		if !deniedByGuard(err) {
			return fmt.Errorf("not denied by the guard: %v", err)
		}
		return nil
	})

	ctx, cancel := context.WithTimeout(context.Background(), 26*time.Second)
	defer cancel()
	var requests, failures atomic.Int64
	var failMu sync.Mutex
	var failed []string
	fail := func(msg string) {
		failures.Add(1)
		failMu.Lock()
		if len(failed) < 10 {
			failed = append(failed, msg)
		}
		failMu.Unlock()
	}
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Go(func() {
			for i := 0; ctx.Err() == nil; i++ {
				name := fmt.Sprintf("cm%d", (w+i)%objects)
				requests.Add(1)
				if i%2 == 0 {
					// A field Git sets: denied by policy (a dry run: nothing changes).
					if err := patch(alice, name, fmt.Sprintf(`{"data":{"value":"hand-%d"}}`, i), true); !deniedByGuard(err) {
						fail(fmt.Sprintf("patch of Git's field of %s: want the guard's denial, got %v", name, err))
					}
				} else {
					// Git's own value, written again: admitted (the webhook is
					// asked and finds nothing to decide).
					if err := patch(alice, name, `{"data":{"value":"git"}}`, false); err != nil && !apierrors.IsConflict(err) {
						fail(fmt.Sprintf("patch of %s with Git's value: %v", name, err))
					}
				}
			}
		})
	}
	// Handshake probes and what the Secret holds, while the load runs.
	var probes, probeFailures int
	var probeErr error
	served := map[string]bool{}
	cas := map[string]bool{}
	maxCAs := 0
	tick := time.NewTicker(100 * time.Millisecond)
	for ctx.Err() == nil {
		<-tick.C
		bundle, err := registeredCA(e)
		if err != nil {
			continue
		}
		probes++
		leaf, err := handshake(g.webhookAddr, bundle)
		if err != nil {
			probeFailures++
			probeErr = err
			continue
		}
		served[leaf.SerialNumber.String()] = true
		if s, err := e.kube.CoreV1().Secrets(guardNS).Get(ctx, "webhook-tls", metav1.GetOptions{}); err == nil {
			if b, err := certs.Parse(s.Data, s.Annotations); err == nil {
				cas[b.CAs[0].SerialNumber.String()] = true
				maxCAs = max(maxCAs, len(b.CAs))
			}
		}
	}
	tick.Stop()
	wg.Wait()

	t.Logf("%d admission requests, %d handshake probes; %d serving certificates and %d CAs seen; %d rotations logged",
		requests.Load(), probes, len(served), len(cas), g.logCount("certificates rotated"))
	if failures.Load() > 0 {
		t.Errorf("%d of %d admission requests failed during rotation, e.g.:\n%s", failures.Load(), requests.Load(), strings.Join(failed, "\n"))
	}
	if probeFailures > 0 {
		t.Errorf("%d of %d handshakes with the registered CA bundle failed, last: %v", probeFailures, probes, probeErr)
	}
	if requests.Load() < 100 {
		t.Errorf("only %d admission requests: not a load", requests.Load())
	}
	if len(served) < 5 || len(cas) < 2 || maxCAs < 2 {
		t.Errorf("the certificates did not rotate as configured: %d serving certificates, %d CAs, at most %d CAs in the bundle", len(served), len(cas), maxCAs)
	}
}

// patch patches a ConfigMap in namespace load as alice.
func patch(c kubernetes.Interface, name, body string, dryRun bool) error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	opts := metav1.PatchOptions{}
	if dryRun {
		opts.DryRun = []string{metav1.DryRunAll}
	}
	_, err := c.CoreV1().ConfigMaps("load").Patch(ctx, name, types.MergePatchType, []byte(body), opts)
	return err
}

// deniedByGuard reports a denial by the guard's policy (not a webhook
// failure, which says "failed calling webhook").
func deniedByGuard(err error) bool {
	return err != nil && apierrors.IsForbidden(err) && strings.Contains(err.Error(), "managed by Git") &&
		!strings.Contains(err.Error(), "failed calling webhook")
}

// registeredCA is the CA bundle of the validating configuration's first webhook.
func registeredCA(e *env) ([]byte, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	v, err := e.kube.AdmissionregistrationV1().ValidatingWebhookConfigurations().Get(ctx, webhookName, metav1.GetOptions{})
	if err != nil {
		return nil, err
	}
	if len(v.Webhooks) == 0 || len(v.Webhooks[0].ClientConfig.CABundle) == 0 {
		return nil, fmt.Errorf("no CA bundle registered")
	}
	return v.Webhooks[0].ClientConfig.CABundle, nil
}

// handshake opens a new TLS connection to addr trusting bundle, and returns
// the certificate served.
func handshake(addr string, bundle []byte) (*x509.Certificate, error) {
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(bundle) {
		return nil, fmt.Errorf("bad CA bundle")
	}
	conn, err := tls.DialWithDialer(&netDialer, "tcp", addr, &tls.Config{RootCAs: pool, ServerName: "127.0.0.1", MinVersion: tls.VersionTLS12})
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	return conn.ConnectionState().PeerCertificates[0], nil
}

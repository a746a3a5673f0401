package webhook

import (
	"context"
	"path/filepath"
	"sync/atomic"
	"testing"

	"github.com/go-logr/logr/testr"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/driftguard/driftguard/devenv"
)

// TestSyncLeavesAnUninstallsDeletionAlone: on a real API server, a Sync
// that finds a configuration deleted while the guard's Deployment is gone
// (an uninstall) leaves it deleted, whatever woke the Sync: the watch's
// delete event may come after it (make test once saw the configuration
// restored that way). Once the Deployment is back, the next Sync restores it.
func TestSyncLeavesAnUninstallsDeletionAlone(t *testing.T) {
	devenv.RequireBinaries(t, false)
	ctx := context.Background()
	cluster, err := devenv.Start(ctx, devenv.Options{Dir: filepath.Join(t.TempDir(), "cluster"), Log: testr.New(t)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cluster.Stop() })
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	c, err := client.New(cluster.Config, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	var uninstalling atomic.Bool
	r, err := NewRegistrar(RegistrarOptions{Client: c, Mapper: meta.NewDefaultRESTMapper(nil),
		Kinds:        func() []schema.GroupVersionKind { return nil },
		Uninstalling: func(context.Context) bool { return uninstalling.Load() }, Log: testr.New(t)})
	if err != nil {
		t.Fatal(err)
	}
	r.registration = Registration{Name: "driftguard", URL: "https://127.0.0.1:9443", FailurePolicy: admissionregistrationv1.Ignore,
		TimeoutSeconds: 5, LabelKey: "driftguard.io/guard"}
	r.forced.Store(true)
	validating := func() error {
		return c.Get(ctx, client.ObjectKey{Name: "driftguard"}, &admissionregistrationv1.ValidatingWebhookConfiguration{})
	}
	sync := func(step string) {
		t.Helper()
		r.forced.Store(true) // as the watch's events and the Run loop ask
		if err := r.Sync(ctx); err != nil {
			t.Fatalf("%s: Sync: %v", step, err)
		}
	}
	sync("first registration")
	if err := validating(); err != nil {
		t.Fatalf("not registered: %v", err)
	}
	uninstalling.Store(true)
	if err := c.Delete(ctx, &admissionregistrationv1.ValidatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: "driftguard"}}); err != nil {
		t.Fatal(err)
	}
	sync("during the uninstall")
	if err := validating(); !apierrors.IsNotFound(err) {
		t.Fatalf("configuration restored during an uninstall (%v)", err)
	}
	if !r.leftDeleted.Load() || !r.deleted.Load() {
		t.Fatalf("left deleted %v, deleted %v: the Run loop would not say so", r.leftDeleted.Load(), r.deleted.Load())
	}
	uninstalling.Store(false)
	sync("the Deployment back")
	if err := validating(); err != nil {
		t.Fatalf("not restored once the Deployment is back: %v", err)
	}
	if r.leftDeleted.Load() {
		t.Fatal("still marked left deleted")
	}
}

package policy

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/yaml"

	"github.com/driftguard/driftguard/health"
)

// examplesHealthDir holds the Rego health rules shipped for common CRDs of
// the ecosystem; examplesHealthData the objects, shaped as their
// controllers leave them, the rules are checked against.
const (
	examplesHealthDir  = "../examples/health/ecosystem"
	examplesHealthData = "../examples/health/testdata"
)

// TestExampleHealthRules loads the example rules as the guard does
// (LoadHealthDir, then health.AssessCustom) and assesses every object of
// examples/health/testdata; every object there must have a case.
func TestExampleHealthRules(t *testing.T) {
	engine, err := LoadHealthDir(examplesHealthDir, logr.Discard())
	if err != nil {
		t.Fatal(err)
	}
	cased := map[string]bool{}
	for _, tc := range []struct {
		file, name string
		want       health.Result
	}{
		{"argo-workflows.yaml", "build-failed", health.Result{State: health.Degraded, Message: "failed: child 'build-failed-3127480711' failed"}},
		{"argo-workflows.yaml", "build-error", health.Result{State: health.Degraded, Message: "error: pod deleted"}},
		{"argo-workflows.yaml", "build-running", health.Result{State: health.Progressing, Message: "running (progress 1/3)"}},
		{"argo-workflows.yaml", "build-ok", health.Result{State: health.Healthy, Message: "succeeded (progress 3/3)"}},
		{"argo-workflows.yaml", "release-approval", health.Result{State: health.Suspended, Message: "suspended (progress 1/2)"}},
		{"argo-workflows.yaml", "just-created", health.Result{State: health.Progressing, Message: "waiting for the workflow controller"}},

		{"argo-cd.yaml", "shop-degraded", health.Result{State: health.Degraded, Message: `Deployment "web" exceeded its progress deadline (Synced at 9f1c2e4)`}},
		{"argo-cd.yaml", "shop-sync-failed", health.Result{State: health.Degraded, Message: `sync failed: one or more objects failed to apply, reason: Deployment.apps "web" is invalid: spec.template.spec.containers[0].image: Required value`}},
		{"argo-cd.yaml", "shop-out-of-sync", health.Result{State: health.Progressing, Message: "healthy but OutOfSync at 4e5f607"}},
		{"argo-cd.yaml", "shop-manual-out-of-sync", health.Result{State: health.Healthy, Message: "healthy (OutOfSync at 4e5f607)"}},
		{"argo-cd.yaml", "shop-missing", health.Result{State: health.Progressing, Message: "resources missing"}},
		{"argo-cd.yaml", "shop-healthy", health.Result{State: health.Healthy, Message: "healthy (Synced at 9f1c2e4)"}},

		{"cert-manager.yaml", "web-tls", health.Result{State: health.Healthy, Message: "valid until 2027-02-18T07:00:10Z, renewal at 2027-01-19T07:00:10Z"}},
		{"cert-manager.yaml", "api-tls", health.Result{State: health.Progressing, Message: "issuing: DoesNotExist: Issuing certificate as Secret does not exist"}},
		{"cert-manager.yaml", "admin-tls", health.Result{State: health.Degraded, Message: `issuance failed 3 times, last at 2026-12-03T21:04:40Z: Failed: The certificate request has failed to complete and will be retried: Failed to wait for order resource "admin-tls-1-3305112466" to become ready: order is in "invalid" state:`}},
		{"cert-manager.yaml", "web-tls-renewing", health.Result{State: health.Healthy, Message: "renewing (Renewing: Renewing certificate as renewal was scheduled at 2027-01-19 07:00:10 +0000 UTC); valid until 2027-02-18T07:00:10Z"}},
		{"cert-manager.yaml", "edited-tls", health.Result{State: health.Progressing, Message: "generation not yet observed by cert-manager"}},

		{"flux.yaml", "apps", health.Result{State: health.Healthy, Message: "ReconciliationSucceeded: Applied revision: main@sha1:5c1f0e2d9b8a7c6d5e4f3a2b1c0d9e8f7a6b5c4d"}},
		{"flux.yaml", "infra", health.Result{State: health.Degraded, Message: "not ready: BuildFailed: kustomize build failed: accumulating resources: accumulation err='accumulating resources from './ingress': open /tmp/kustomization-123/infra/ingress: no such file or directory'"}},
		{"flux.yaml", "monitoring", health.Result{State: health.Progressing, Message: "reconciling: ProgressingWithRetry: Detecting drift for revision main@sha1:5c1f0e2d with a timeout of 5m0s"}},
		{"flux.yaml", "paused", health.Result{State: health.Suspended, Message: "suspended (spec.suspend)"}},
		{"flux.yaml", "podinfo", health.Result{State: health.Degraded, Message: "stalled: RetriesExceeded: Failed to upgrade after 3 attempt(s)"}},
		{"flux.yaml", "redis", health.Result{State: health.Healthy, Message: "UpgradeSucceeded: Helm upgrade succeeded for release shop/redis.v4 with chart redis@20.6.2"}},
		{"flux.yaml", "nats", health.Result{State: health.Progressing, Message: "generation not yet observed by Flux"}},

		{"crossplane.yaml", "shop-assets", health.Result{State: health.Healthy, Message: "Available"}},
		{"crossplane.yaml", "shop-logs", health.Result{State: health.Degraded, Message: "cannot sync with the provider: ReconcileError: create failed: async create failed: failed to create the resource: [{0 creating S3 Bucket (shop-logs): operation error S3: CreateBucket, https response error StatusCode: 409, BucketAlreadyExists:  []}]"}},
		{"crossplane.yaml", "shop-db", health.Result{State: health.Progressing, Message: "Creating"}},
		{"crossplane.yaml", "shop-vpc", health.Result{State: health.Degraded, Message: "not ready: Unavailable: VPC vpc-0a1b2c3d is in state pending"}},
	} {
		cased[tc.file+"/"+tc.name] = true
		t.Run(strings.TrimSuffix(tc.file, ".yaml")+"/"+tc.name, func(t *testing.T) {
			obj := exampleObject(t, tc.file, tc.name)
			got, err := health.AssessCustom(context.Background(), obj, nil, engine)
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Errorf("health = %s\n     want %s", got, tc.want)
			}
			// The rule answers, not the built-in one.
			if _, ok, err := engine.Health(context.Background(), obj); !ok || err != nil {
				t.Errorf("the example rules have no opinion (%v)", err)
			}
		})
	}

	files, err := filepath.Glob(filepath.Join(examplesHealthData, "*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no objects in %s (%v)", examplesHealthData, err)
	}
	for _, f := range files {
		for _, obj := range exampleObjects(t, filepath.Base(f)) {
			if key := filepath.Base(f) + "/" + obj.GetName(); !cased[key] {
				t.Errorf("%s has no case", key)
			}
		}
	}

	// The rules' own Rego tests pass.
	var out bytes.Buffer
	passed, failed, err := Test(context.Background(), examplesHealthDir, &out, false)
	if err != nil || failed > 0 || passed == 0 {
		t.Errorf("Rego tests: %d passed, %d failed, %v\n%s", passed, failed, err, out.String())
	}
}

// exampleObject returns the object called name in examplesHealthData/file.
func exampleObject(t *testing.T, file, name string) *unstructured.Unstructured {
	t.Helper()
	for _, u := range exampleObjects(t, file) {
		if u.GetName() == name {
			return u
		}
	}
	t.Fatalf("%s: no object %s", file, name)
	return nil
}

// exampleObjects returns the objects of examplesHealthData/file.
func exampleObjects(t *testing.T, file string) []*unstructured.Unstructured {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(examplesHealthData, file))
	if err != nil {
		t.Fatal(err)
	}
	var out []*unstructured.Unstructured
	dec := yaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	for {
		var m map[string]any
		if err := dec.Decode(&m); err == io.EOF {
			return out
		} else if err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		if m != nil {
			out = append(out, &unstructured.Unstructured{Object: m})
		}
	}
}

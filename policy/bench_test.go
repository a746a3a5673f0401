package policy

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/rego"
)

// deployment returns an unstructured Deployment of realistic size, as the
// webhook gets it (numbers as int64, as apimachinery decodes them).
func deployment(replicas int64) map[string]any {
	container := func(name, image string, port int64) map[string]any {
		return map[string]any{
			"name":            name,
			"image":           image,
			"imagePullPolicy": "IfNotPresent",
			"ports":           []any{map[string]any{"containerPort": port, "name": "http", "protocol": "TCP"}},
			"env": []any{
				map[string]any{"name": "LOG_LEVEL", "value": "info"},
				map[string]any{"name": "POD_NAME", "valueFrom": map[string]any{"fieldRef": map[string]any{"fieldPath": "metadata.name"}}},
			},
			"resources": map[string]any{
				"limits":   map[string]any{"cpu": "500m", "memory": "256Mi"},
				"requests": map[string]any{"cpu": "100m", "memory": "128Mi"},
			},
			"readinessProbe": map[string]any{
				"httpGet":       map[string]any{"path": "/healthz", "port": "http"},
				"periodSeconds": int64(10),
			},
		}
	}
	return map[string]any{
		"apiVersion": "apps/v1",
		"kind":       "Deployment",
		"metadata": map[string]any{
			"name":              "web",
			"namespace":         "shop",
			"uid":               "6f1c2a0e-8b7d-4c1e-9a55-3d2f1e0b9c8a",
			"resourceVersion":   "123456",
			"generation":        int64(7),
			"creationTimestamp": "2026-01-02T03:04:05Z",
			"labels":            map[string]any{"app.kubernetes.io/name": "web", "app.kubernetes.io/managed-by": "driftguard"},
			"annotations": map[string]any{
				"deployment.kubernetes.io/revision": "7",
				"driftguard.io/source":              "https://git.example/infra.git//apps/web/deployment.yaml",
			},
		},
		"spec": map[string]any{
			"replicas":             replicas,
			"revisionHistoryLimit": int64(10),
			"selector":             map[string]any{"matchLabels": map[string]any{"app.kubernetes.io/name": "web"}},
			"strategy":             map[string]any{"type": "RollingUpdate", "rollingUpdate": map[string]any{"maxSurge": "25%", "maxUnavailable": "25%"}},
			"template": map[string]any{
				"metadata": map[string]any{"labels": map[string]any{"app.kubernetes.io/name": "web"}},
				"spec": map[string]any{
					"containers":                    []any{container("web", "registry.example/web:1.4.2", 8080), container("proxy", "registry.example/proxy:2.0.1", 9090)},
					"serviceAccountName":            "web",
					"terminationGracePeriodSeconds": int64(30),
				},
			},
		},
		"status": map[string]any{"replicas": replicas, "readyReplicas": int64(3), "observedGeneration": int64(7)},
	}
}

func benchInput() Input {
	in := baseInput()
	in.Object = deployment(5)
	in.OldObject = deployment(3)
	in.Desired = deployment(3)
	return in
}

// BenchmarkDecide measures the default policy on a manual scale of a
// Deployment (the deny path: every rule of the chain is tried).
func BenchmarkDecide(b *testing.B) {
	e := NewEngine(testConfig, logr.Discard())
	ctx := context.Background()
	for _, bc := range []struct {
		name string
		mod  func(*Input)
	}{
		{"deny", func(*Input) {}},
		{"guard", func(in *Input) { in.User = User{Username: guardSA, ServiceAccount: true} }},
		{"break-glass", func(in *Input) {
			in.User.Groups = []string{"sre"}
			in.Annotations = map[string]string{"driftguard.io/break-glass": "INC-1"}
		}},
	} {
		in := benchInput()
		bc.mod(&in)
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := e.Decide(ctx, in); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
	b.Run("deny-parallel", func(b *testing.B) {
		in := benchInput()
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				if _, err := e.Decide(ctx, in); err != nil {
					b.Error(err)
					return
				}
			}
		})
	})
}

// BenchmarkInputConversion compares the explicit converter with the JSON
// round trip and with ast.InterfaceToValue on the same input.
func BenchmarkInputConversion(b *testing.B) {
	in := benchInput()
	b.Run("explicit", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := inputValue(&in); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("json-round-trip", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			raw, err := json.Marshal(in)
			if err != nil {
				b.Fatal(err)
			}
			if _, err := ast.ValueFromReader(strings.NewReader(string(raw))); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("interface-to-value", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := ast.InterfaceToValue(in); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("rego.EvalInput", func(b *testing.B) {
		// What Decide would cost handing OPA the Go struct directly.
		e := NewEngine(testConfig, logr.Discard())
		q := e.cur.Load().query
		b.ReportAllocs()
		for b.Loop() {
			if _, err := q.Eval(context.Background(), rego.EvalInput(in)); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// TestDecideLatency logs the latency distribution of the default policy on
// the benchmark input (the target is well under 1 ms at p99). It does not
// fail on timing: shared CI machines vary too much.
func TestDecideLatency(t *testing.T) {
	if testing.Short() {
		t.Skip("timing run")
	}
	e := NewEngine(testConfig, logr.Discard())
	in := benchInput()
	const n = 2000
	lat := make([]time.Duration, n)
	for i := range lat {
		start := time.Now()
		if _, err := e.Decide(context.Background(), in); err != nil {
			t.Fatal(err)
		}
		lat[i] = time.Since(start)
	}
	slices.Sort(lat)
	t.Logf("Decide latency over %d calls: p50 %v, p99 %v, max %v", n, lat[n/2], lat[n*99/100], lat[n-1])
}

package bench

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	admissionv1 "k8s.io/api/admission/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/driftguard/driftguard/audit"
	"github.com/driftguard/driftguard/certs"
	"github.com/driftguard/driftguard/policy"
	"github.com/driftguard/driftguard/render"
	"github.com/driftguard/driftguard/test/bench/report"
	"github.com/driftguard/driftguard/webhook"
)

const (
	whNS      = "bench-wh"
	whGuard   = "bench-wh"
	whObjects = 50
)

// whSize is the rounds per arm (arms interleaved) and the sequential
// patches per round of BenchmarkWebhookOverhead.
// whWarmUp is the unmeasured patches after each switch of configurations.
const whWarmUp = 5

func whSize() (rounds, patches int) {
	if *quick {
		return 2, 50
	}
	return 10, 100
}

// httpsDuration is how long each client count of BenchmarkWebhookHTTPS
// posts reviews, and BenchmarkWebhookHandler decides them.
func httpsDuration() time.Duration {
	if *quick {
		return time.Second
	}
	return 5 * time.Second
}

// webhookArm is one admission configuration of the API server.
type webhookArm struct {
	name string
	key  string // metric prefix
	on   bool   // the guard's configurations present
}

// BenchmarkWebhookOverhead: the latency of a PATCH of a field Git sets on a
// managed ConfigMap, by an identity the policy allows (so the webhook runs
// the policy and the change is stored), with the guard's webhook
// configurations as registered (the mutating webhook decides and stamps the
// update in one call) and with none; rounds of the two arms alternate in one
// run. The Guard has selfHeal off, so nothing reverts the patches in any arm.
func BenchmarkWebhookOverhead(b *testing.B) {
	e := guardEnv(b)
	e.configMapGuard(b, whGuard, whNS, whObjects, false)
	user := e.userClient(b, benchUser, []string{"system:masters"})
	alice := e.userClient(b, "alice", []string{"system:masters", "dev"})
	arms := []webhookArm{{name: "as registered (one call: decide and stamp)", key: "registered", on: true}, {name: "no webhook configuration", key: "none"}}
	set := func(a webhookArm) { e.setAdmission(b, a.on, alice, whNS, cmName(0)) }
	defer set(arms[0])

	from := e.audit.len()
	lat := make([][]time.Duration, len(arms))
	tokens := make([][]string, len(arms))
	seq := 0
	whRounds, whPatches := whSize()
	b.ResetTimer()
	for round := range whRounds {
		for ai, a := range arms {
			set(a)
			// Unmeasured: the first requests after the configurations were
			// (re)created pay for the API server setting up its webhook
			// clients, which a cluster does once, not per request.
			for i := range whWarmUp {
				if _, err := patchValue(user, whNS, cmName(seq%whObjects), fmt.Sprintf("wh-warm-%d-%d-%d", round, ai, i)); err != nil {
					b.Fatalf("warm-up patch as bench-user (%s): %v", a.name, err)
				}
				seq++
			}
			for i := range whPatches {
				token := fmt.Sprintf("wh-%d-%d-%d", round, ai, i)
				d, err := patchValue(user, whNS, cmName(seq%whObjects), token)
				seq++
				if err != nil {
					b.Fatalf("patch as bench-user (%s): %v", a.name, err)
				}
				lat[ai] = append(lat[ai], d)
				tokens[ai] = append(tokens[ai], token)
			}
		}
	}
	b.StopTimer()
	var all []string
	for _, ts := range tokens[:len(tokens)-1] {
		all = append(all, ts...)
	}
	waitAudit(e.audit, from, all, []audit.Type{audit.Decision}, auditQuiet, auditMax)
	recs, _ := e.audit.since(from)
	decided := map[string]bool{}
	for _, s := range recs {
		if s.rec.Type == audit.Decision && s.rec.User == benchUser {
			for _, v := range liveValues(s.rec) {
				decided[v] = true
			}
		}
	}
	var rows [][]string
	b.ReportMetric(0, "ns/op")
	baseP50, baseP99 := quantile(lat[len(arms)-1], .5), quantile(lat[len(arms)-1], .99)
	for ai, a := range arms {
		n := 0
		for _, t := range tokens[ai] {
			if decided[t] {
				n++
			}
		}
		p50, p99 := quantile(lat[ai], .5), quantile(lat[ai], .99)
		rows = append(rows, []string{a.name, fmt.Sprint(len(lat[ai])), fmtMS(p50), fmtMS(p99), fmtMS(quantile(lat[ai], 1)),
			fmt.Sprintf("%+.1f", ms(p50-baseP50)), fmt.Sprintf("%+.1f", ms(p99-baseP99)), fmt.Sprint(n)})
		b.ReportMetric(ms(p50), a.key+"-p50-ms")
		b.ReportMetric(ms(p99), a.key+"-p99-ms")
	}
	b.ReportMetric(ms(quantile(lat[0], .5)-baseP50), "overhead-p50-ms")
	b.ReportMetric(ms(quantile(lat[0], .99)-baseP99), "overhead-p99-ms")
	printTable(fmt.Sprintf("BenchmarkWebhookOverhead: PATCH of data.value (a field Git sets) by bench-user (allowed by policy), %d ConfigMaps, selfHeal off, %d rounds x %d patches per arm, sequential",
		whObjects, whRounds, whPatches),
		[]string{"admission configuration", "n", "p50 ms", "p99 ms", "max ms", "Δp50 vs none", "Δp99 vs none", "decision records"}, rows)
	note := fmt.Sprintf("%s vs none, %d rounds x %d sequential patches per arm", arms[0].name, whRounds, whPatches)
	figure(b, withNote(report.NewFigure("webhook_overhead_p50", ms(quantile(lat[0], .5)-baseP50), "ms", report.AtMost, 1.5).WithBaseline(ms(baseP50), "ms"), note))
	figure(b, withNote(report.NewFigure("webhook_overhead_p99", ms(quantile(lat[0], .99)-baseP99), "ms", report.AtMost, 3).WithBaseline(ms(baseP99), "ms"), note))
}

// BenchmarkWebhookHTTPS: the webhook server alone (webhook.NewServer over TLS
// on 127.0.0.1:0, the built-in policy, an audit logger writing to
// io.Discard) answering the AdmissionReview of `kubectl scale deploy/web
// --replicas=5` by alice, which the policy denies; N clients, each with its
// own connection, post it back to back for 5 s.
func BenchmarkWebhookHTTPS(b *testing.B) {
	best, bestClients := 0.0, 0
	for _, clients := range []int{1, 4, 16} {
		b.Run(fmt.Sprintf("clients=%d", clients), func(b *testing.B) {
			if rate := benchHTTPS(b, clients, httpsDuration()); rate > best {
				best, bestClients = rate, clients
			}
		})
	}
	figure(b, withNote(report.NewFigure("webhook_https_reviews_per_s", best, "reviews/s", report.AtLeast, 2000),
		fmt.Sprintf("denied scale review over TLS on loopback, best of 1, 4, 16 clients (%d)", bestClients)))
}

// BenchmarkWebhookHandler: the validating handler alone (decode, compare,
// policy, encode: Validator.ServeHTTP on a recorder, no network), deciding
// the denied scale review of BenchmarkWebhookHTTPS one after another; the
// latency of each.
func BenchmarkWebhookHandler(b *testing.B) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	v := scaleValidator(b, ctx)
	body := scaleReview(b)
	serve := func() *httptest.ResponseRecorder {
		req := httptest.NewRequest(http.MethodPost, webhook.ValidatePath, bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		rec := httptest.NewRecorder()
		v.ServeHTTP(rec, req)
		return rec
	}
	if rec := serve(); rec.Code != http.StatusOK || !strings.Contains(rec.Body.String(), `"allowed":false`) {
		b.Fatalf("scale by alice was not denied: %d %s", rec.Code, rec.Body)
	}
	lat := make([]time.Duration, 0, 1<<16)
	b.ResetTimer()
	for end := time.Now().Add(httpsDuration()); time.Now().Before(end); {
		t0 := time.Now()
		serve()
		lat = append(lat, time.Since(t0))
	}
	b.StopTimer()
	b.ReportMetric(0, "ns/op")
	b.ReportMetric(ms(quantile(lat, .5)), "p50-ms")
	b.ReportMetric(ms(quantile(lat, .99)), "p99-ms")
	printTable("BenchmarkWebhookHandler: denied Deployment scale review, Validator.ServeHTTP in-process, sequential",
		[]string{"reviews", "p50 ms", "p99 ms", "max ms"},
		[][]string{{fmt.Sprint(len(lat)), fmtMS(quantile(lat, .5)), fmtMS(quantile(lat, .99)), fmtMS(quantile(lat, 1))}})
	figure(b, withNote(report.NewFigure("webhook_handler_p99", ms(quantile(lat, .99)), "ms", report.AtMost, 1),
		fmt.Sprintf("%d sequential reviews, in-process", len(lat))))
}

// benchHTTPS posts the review from clients connections for dur and
// returns the reviews per second.
func benchHTTPS(b *testing.B, clients int, dur time.Duration) float64 {
	stopCurrent() // the control plane would compete for the two cores
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	v := scaleValidator(b, ctx)
	serving, err := certs.NewStatic([]string{"127.0.0.1"})
	if err != nil {
		b.Fatal(err)
	}
	srv := webhook.NewServer("127.0.0.1:0", serving.Cert, v, nil, logr.Discard())
	served := make(chan error, 1)
	go func() { served <- srv.Start(ctx) }()
	addr, err := srv.BoundAddr(ctx)
	if err != nil {
		b.Fatal(err)
	}
	url := "https://" + addr.String() + webhook.ValidatePath
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(serving.CA) {
		b.Fatal("bad CA PEM")
	}
	body := scaleReview(b)
	newClient := func() *http.Client {
		return &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
			TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}, ForceAttemptHTTP2: true, MaxIdleConnsPerHost: 1,
		}}
	}
	// One review end to end: it must be a denial naming the Git file.
	if out := postReview(b, newClient(), url, body, true); out.Response == nil || out.Response.Allowed || out.Response.Result == nil ||
		!strings.Contains(out.Response.Result.Message, "apps/web.yaml") {
		b.Fatalf("scale by alice was not denied as expected: %+v", out.Response)
	}

	lat := make([][]time.Duration, clients)
	errs := make([]error, clients)
	var wg sync.WaitGroup
	b.ResetTimer()
	start := time.Now()
	end := start.Add(dur)
	for c := range clients {
		hc := newClient()
		lat[c] = make([]time.Duration, 0, 1<<14)
		wg.Go(func() {
			for time.Now().Before(end) {
				t0 := time.Now()
				resp, err := hc.Post(url, "application/json", bytes.NewReader(body))
				if err == nil {
					_, err = io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
					if err == nil && resp.StatusCode != http.StatusOK {
						err = fmt.Errorf("status %s", resp.Status)
					}
				}
				if err != nil {
					errs[c] = err
					return
				}
				lat[c] = append(lat[c], time.Since(t0))
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	b.StopTimer()
	for _, err := range errs {
		if err != nil {
			b.Fatal(err)
		}
	}
	var all []time.Duration
	for _, l := range lat {
		all = append(all, l...)
	}
	rate := float64(len(all)) / elapsed.Seconds()
	b.ReportMetric(0, "ns/op")
	b.ReportMetric(rate, "reviews/s")
	b.ReportMetric(ms(quantile(all, .5)), "p50-ms")
	b.ReportMetric(ms(quantile(all, .99)), "p99-ms")
	printTable(fmt.Sprintf("BenchmarkWebhookHTTPS clients=%d: denied Deployment scale review over TLS, %s", clients, dur),
		[]string{"reviews", "reviews/s", "p50 ms", "p99 ms", "max ms"},
		[][]string{{fmt.Sprint(len(all)), fmt.Sprintf("%.0f", rate), fmtMS(quantile(all, .5)), fmtMS(quantile(all, .99)), fmtMS(quantile(all, 1))}})
	cancel()
	if err := <-served; err != nil {
		b.Fatal(err)
	}
	return rate
}

func postReview(b *testing.B, hc *http.Client, url string, body []byte, decode bool) admissionv1.AdmissionReview {
	b.Helper()
	var out admissionv1.AdmissionReview
	resp, err := hc.Post(url, "application/json", bytes.NewReader(body))
	if err != nil {
		b.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		msg, _ := io.ReadAll(resp.Body)
		b.Fatalf("status %s: %s", resp.Status, msg)
	}
	if decode {
		if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
			b.Fatal(err)
		}
	}
	return out
}

// scaleValidator is a Validator whose store holds Deployment shop/web with
// three replicas from apps/web.yaml, deciding with the built-in policy.
func scaleValidator(b *testing.B, ctx context.Context) *webhook.Validator {
	b.Helper()
	web := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apps/v1", "kind": "Deployment",
		"metadata": map[string]any{"name": "web", "namespace": "shop", "labels": map[string]any{"app": "web", "driftguard.io/guard": "shop"}},
		"spec": map[string]any{
			"replicas": int64(3),
			"selector": map[string]any{"matchLabels": map[string]any{"app": "web"}},
			"template": map[string]any{
				"metadata": map[string]any{"labels": map[string]any{"app": "web"}},
				"spec":     map[string]any{"containers": []any{map[string]any{"name": "web", "image": "nginx:1.27", "ports": []any{map[string]any{"containerPort": int64(80)}}}}},
			},
		},
	}}
	const url, rev = "https://git.example/infra.git", "f890ad1c0ffee0ddba11f00dfeedbeefcafe0123"
	snap, err := render.NewSnapshot(url, rev, []*render.Object{
		render.NewObject(web, render.Source{URL: url, Revision: rev, Path: "apps/web.yaml", Line: 1}),
	})
	if err != nil {
		b.Fatal(err)
	}
	store := render.NewStore()
	store.Set("shop", snap)
	mapper := meta.NewDefaultRESTMapper(nil)
	mapper.Add(schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"}, meta.RESTScopeNamespace)
	auditLog := audit.NewLogger(logr.Discard(), 4096, audit.NewWriterSink("discard", io.Discard))
	go func() { _ = auditLog.Start(ctx) }()
	v, err := webhook.NewValidator(webhook.ValidatorOptions{
		Store: store, Mapper: mapper, Audit: auditLog, MaxInFlight: 256, Deadline: 4 * time.Second, Log: logr.Discard(),
		Policy: policy.NewEngine(policy.Config{GuardUsers: []string{"driftguard"}}, logr.Discard()),
	})
	if err != nil {
		b.Fatal(err)
	}
	return v
}

// scaleReview is the AdmissionReview the API server sends for
// `kubectl scale deploy/web --replicas=5 -n shop` by alice.
func scaleReview(b *testing.B) []byte {
	b.Helper()
	scale := func(replicas int) runtime.RawExtension {
		return runtime.RawExtension{Raw: fmt.Appendf(nil,
			`{"kind":"Scale","apiVersion":"autoscaling/v1","metadata":{"name":"web","namespace":"shop","uid":"5d1c6a3e-9a4e-4a8e-8d7e-3f1f0b2a9c11","resourceVersion":"48211","creationTimestamp":"2026-12-02T10:00:00Z"},"spec":{"replicas":%d},"status":{"replicas":3,"selector":"app=web"}}`, replicas)}
	}
	deploy := metav1.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}
	scaleKind := metav1.GroupVersionKind{Group: "autoscaling", Version: "v1", Kind: "Scale"}
	dry := false
	review := admissionv1.AdmissionReview{
		TypeMeta: metav1.TypeMeta{APIVersion: "admission.k8s.io/v1", Kind: "AdmissionReview"},
		Request: &admissionv1.AdmissionRequest{
			UID: "0b7c2f4e-1d3a-4c5b-9e8f-6a7b8c9d0e1f", Kind: scaleKind, Resource: deploy, SubResource: "scale",
			RequestKind: &scaleKind, RequestResource: &deploy, RequestSubResource: "scale",
			Name: "web", Namespace: "shop", Operation: admissionv1.Update,
			UserInfo: authenticationv1.UserInfo{Username: "alice", UID: "alice", Groups: []string{"dev", "system:authenticated"}},
			Object:   scale(5), OldObject: scale(3), DryRun: &dry,
			Options: runtime.RawExtension{Raw: []byte(`{"kind":"UpdateOptions","apiVersion":"meta.k8s.io/v1","fieldManager":"kubectl-scale"}`)},
		},
	}
	body, err := json.Marshal(review)
	if err != nil {
		b.Fatal(err)
	}
	return body
}

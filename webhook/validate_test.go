package webhook

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
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
	"github.com/driftguard/driftguard/decision"
	"github.com/driftguard/driftguard/policy"
	"github.com/driftguard/driftguard/render"
)

const desiredDeployment = `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"web","namespace":"shop","labels":{"app":"web","driftguard.io/guard":"shop"}},
"spec":{"replicas":3,"template":{"spec":{"containers":[{"name":"web","image":"nginx:1.27"}]}}}}`

func newValidator(t testing.TB, buf *bytes.Buffer) *Validator {
	t.Helper()
	var u unstructured.Unstructured
	if err := json.Unmarshal([]byte(desiredDeployment), &u.Object); err != nil {
		t.Fatal(err)
	}
	// Numbers as the renderer produces them.
	u.Object["spec"].(map[string]any)["replicas"] = int64(3)
	obj := render.NewObject(&u, render.Source{URL: "https://git.example/infra.git", Revision: "9f2c1e0abcdef", Path: "apps/web.yaml", Line: 1})
	snap, err := render.NewSnapshot("https://git.example/infra.git", "9f2c1e0abcdef", []*render.Object{obj})
	if err != nil {
		t.Fatal(err)
	}
	store := render.NewStore()
	store.Set("shop", snap)
	mapper := meta.NewDefaultRESTMapper(nil)
	mapper.Add(schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"}, meta.RESTScopeNamespace)
	v, err := NewValidator(ValidatorOptions{
		Store: store, Mapper: mapper, MaxInFlight: 4, Log: logr.Discard(),
		Policy: policy.NewEngine(policy.Config{GuardUsers: []string{"driftguard"}}, logr.Discard()),
		Audit:  audit.NewLogger(logr.Discard(), 16, audit.NewWriterSink("buf", buf)),
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	go func() { _ = v.Audit.Start(ctx) }()
	return v
}

func request(op admissionv1.Operation, user, sub string, obj string) *admissionv1.AdmissionRequest {
	req := &admissionv1.AdmissionRequest{
		UID: "uid-1", Operation: op, Namespace: "shop", Name: "web", SubResource: sub,
		Kind:     metav1.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"},
		Resource: metav1.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"},
		UserInfo: authenticationv1.UserInfo{Username: user},
	}
	if sub == "scale" {
		req.Kind = metav1.GroupVersionKind{Group: "autoscaling", Version: "v1", Kind: "Scale"}
	}
	switch {
	case op == admissionv1.Delete:
		req.OldObject = runtime.RawExtension{Raw: []byte(obj)}
	case op == admissionv1.Update && sub == "scale":
		req.Object = runtime.RawExtension{Raw: []byte(obj)}
		req.OldObject = runtime.RawExtension{Raw: []byte(`{"kind":"Scale","spec":{"replicas":3}}`)}
	case op == admissionv1.Update:
		// The object replaced is as Git has it, unless a test says otherwise.
		req.Object = runtime.RawExtension{Raw: []byte(obj)}
		req.OldObject = runtime.RawExtension{Raw: []byte(desiredDeployment)}
	default:
		req.Object = runtime.RawExtension{Raw: []byte(obj)}
	}
	return req
}

// replacing is request for an UPDATE of the object old.
func replacing(user, old, obj string) *admissionv1.AdmissionRequest {
	r := request(admissionv1.Update, user, "", obj)
	r.OldObject = runtime.RawExtension{Raw: []byte(old)}
	return r
}

func TestReview(t *testing.T) {
	scaled := strings.Replace(desiredDeployment, `"replicas":3`, `"replicas":5`, 1)
	annotated := strings.Replace(desiredDeployment, `"labels"`, `"annotations":{"note":"x"},"labels"`, 1)
	sidecar := strings.Replace(desiredDeployment, `"image":"nginx:1.27"}`, `"image":"nginx:1.27"},{"name":"tap","image":"evil","securityContext":{"privileged":true}}`, 1)
	owned := strings.Replace(desiredDeployment, `"labels"`, `"ownerReferences":[{"apiVersion":"v1","kind":"ConfigMap","name":"mine","uid":"u1"}],"labels"`, 1)
	stamped := strings.Replace(desiredDeployment, `"labels"`, `"annotations":{"driftguard.io/changed-by":"{\"user\":\"system:kube-controller-manager\"}"},"labels"`, 1)
	tests := []struct {
		name    string
		req     *admissionv1.AdmissionRequest
		allowed bool
		message []string
	}{
		{"person scales", request(admissionv1.Update, "alice", "scale", `{"kind":"Scale","spec":{"replicas":5}}`), false,
			[]string{"Deployment shop/web is managed by Git", "https://git.example/infra.git apps/web.yaml:1@9f2c1e0", "/spec/replicas: 3 → 5", `policy "managed-by-git"`}},
		{"scale to Git's value", request(admissionv1.Update, "alice", "scale", `{"kind":"Scale","spec":{"replicas":3}}`), true, nil},
		{"person edits a Git field", request(admissionv1.Update, "alice", "", scaled), false, []string{"/spec/replicas: 3 → 5"}},
		{"person adds a field Git does not set", request(admissionv1.Update, "alice", "", annotated), false, []string{"/metadata/annotations/note: (added) \"x\""}},
		{"person adds a sidecar", request(admissionv1.Update, "alice", "", sidecar), false, []string{"/spec/template/spec/containers/1: (added)"}},
		{"person adds an owner reference", request(admissionv1.Update, "alice", "", owned), false, []string{"/metadata/ownerReferences: (added)"}},
		{"the next editor is decided on their own change, not on earlier drift", replacing("alice", scaled, strings.Replace(scaled, `"labels"`, `"annotations":{"note":"x"},"labels"`, 1)), false,
			[]string{"/metadata/annotations/note: (added)"}},
		{"an update that changes nothing is not decided", replacing("alice", scaled, scaled), true, nil},
		{"a stamp written by hand is not an edit (the mutating webhook puts it back)", request(admissionv1.Update, "alice", "", stamped), true, nil},
		{"person deletes", request(admissionv1.Delete, "alice", "", desiredDeployment), false, []string{"Deleting it"}},
		{"guard applies", request(admissionv1.Update, "driftguard", "", scaled), true, nil},
		{"controller", request(admissionv1.Update, "system:kube-controller-manager", "", scaled), true, nil},
		{"unmanaged object", func() *admissionv1.AdmissionRequest {
			r := request(admissionv1.Update, "alice", "", scaled)
			r.Name = "other"
			return r
		}(), true, nil},
		{"undecodable object, fail open", request(admissionv1.Update, "alice", "", `{"spec":`), true, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var buf bytes.Buffer
			v := newValidator(t, &buf)
			resp := v.Review(context.Background(), tt.req)
			if resp.Allowed != tt.allowed {
				t.Fatalf("allowed = %v, want %v (%+v)", resp.Allowed, tt.allowed, resp.Result)
			}
			for _, want := range tt.message {
				if resp.Result == nil || !strings.Contains(resp.Result.Message, want) {
					t.Errorf("message lacks %q: %+v", want, resp.Result)
				}
			}
			if !tt.allowed && resp.Result.Code != http.StatusForbidden {
				t.Errorf("code = %d, want 403", resp.Result.Code)
			}
			if tt.name == "the next editor is decided on their own change, not on earlier drift" && strings.Contains(resp.Result.Message, "/spec/replicas") {
				t.Errorf("the earlier change is blamed on this editor: %s", resp.Result.Message)
			}
		})
	}
}

// TestUndecidedIsRecorded: a change admitted without a decision (overload,
// an object the guard cannot decode) is a record.
func TestUndecidedIsRecorded(t *testing.T) {
	var buf bytes.Buffer
	v := newValidator(t, &buf)
	resp := v.Review(context.Background(), request(admissionv1.Update, "alice", "", `{"spec":`))
	if !resp.Allowed || len(resp.Warnings) == 0 {
		t.Fatalf("undecodable request must be admitted with a warning under Ignore: %+v", resp)
	}
	// Overload: every slot is taken and the deadline passes.
	for range cap(v.sem) {
		v.sem <- struct{}{}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
	defer cancel()
	if resp := v.Review(ctx, request(admissionv1.Update, "alice", "", strings.Replace(desiredDeployment, `"replicas":3`, `"replicas":9`, 1))); !resp.Allowed {
		t.Fatalf("overloaded: %+v", resp)
	}
	if err := v.Audit.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	if n := strings.Count(out, `"rule":"failure-policy"`); n != 2 {
		t.Fatalf("%d failure-policy records, want 2: %s", n, out)
	}
	for _, want := range []string{`"user":"alice"`, "driftguard is overloaded", "decode Deployment of shop/web"} {
		if !strings.Contains(out, want) {
			t.Errorf("records lack %q: %s", want, out)
		}
	}
}

func TestReviewFailClosed(t *testing.T) {
	var buf bytes.Buffer
	v := newValidator(t, &buf)
	v.FailClosed = true
	resp := v.Review(context.Background(), request(admissionv1.Update, "alice", "", `{"spec":`))
	if resp.Allowed || !strings.Contains(resp.Result.Message, "could not decide") {
		t.Fatalf("undecidable request must be denied with Fail: %+v", resp)
	}
}

func TestServeHTTPBadInput(t *testing.T) {
	var buf bytes.Buffer
	v := newValidator(t, &buf)
	tests := []struct {
		name, method, ctype, body string
		code                      int
	}{
		{"get", http.MethodGet, "application/json", "", http.StatusMethodNotAllowed},
		{"wrong content type", http.MethodPost, "text/plain", "{}", http.StatusUnsupportedMediaType},
		{"not json", http.MethodPost, "application/json", "nope", http.StatusBadRequest},
		{"no request", http.MethodPost, "application/json", `{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview"}`, http.StatusBadRequest},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := httptest.NewRecorder()
			req := httptest.NewRequest(tt.method, ValidatePath, strings.NewReader(tt.body))
			req.Header.Set("Content-Type", tt.ctype)
			v.ServeHTTP(rec, req)
			if rec.Code != tt.code {
				t.Fatalf("code = %d, want %d: %s", rec.Code, tt.code, rec.Body)
			}
		})
	}
	// A good review round-trips with the request's UID.
	body, _ := json.Marshal(admissionv1.AdmissionReview{TypeMeta: metav1.TypeMeta{APIVersion: "admission.k8s.io/v1", Kind: "AdmissionReview"},
		Request: request(admissionv1.Update, "alice", "scale", `{"kind":"Scale","spec":{"replicas":9}}`)})
	rec := httptest.NewRecorder()
	req := httptest.NewRequest(http.MethodPost, ValidatePath, bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	v.ServeHTTP(rec, req)
	var out admissionv1.AdmissionReview
	if err := json.Unmarshal(rec.Body.Bytes(), &out); err != nil || out.Response == nil {
		t.Fatalf("bad response %s: %v", rec.Body, err)
	}
	if out.Response.UID != "uid-1" || out.Response.Allowed {
		t.Fatalf("response = %+v", out.Response)
	}
}

func FuzzServeHTTP(f *testing.F) {
	review := func(obj string, sub string) string {
		b, _ := json.Marshal(admissionv1.AdmissionReview{Request: request(admissionv1.Update, "alice", sub, obj)})
		return string(b)
	}
	f.Add(review(desiredDeployment, ""))
	f.Add(review(`{"kind":"Scale","spec":{"replicas":"x"}}`, "scale"))
	f.Add(`{"request":{"operation":"DELETE","name":"web","namespace":"shop","kind":{"group":"apps","kind":"Deployment"},"oldObject":[1]}}`)
	f.Fuzz(func(t *testing.T, body string) {
		var buf bytes.Buffer
		v := newValidator(t, &buf)
		rec := httptest.NewRecorder()
		req := httptest.NewRequest(http.MethodPost, ValidatePath, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		v.ServeHTTP(rec, req)
		if rec.Code != http.StatusOK && rec.Code != http.StatusBadRequest {
			t.Fatalf("code %d", rec.Code)
		}
	})
}

func BenchmarkReviewDeny(b *testing.B) {
	var buf bytes.Buffer
	v := newValidator(b, &buf)
	scaled := strings.Replace(desiredDeployment, `"replicas":3`, `"replicas":5`, 1)
	req := request(admissionv1.Update, "alice", "", scaled)
	b.ReportAllocs()
	for b.Loop() {
		if v.Review(context.Background(), req).Allowed {
			b.Fatal("admitted")
		}
	}
}

// TestReviewPolicyFailureRecorded: a change the failure policy decides
// because the policy failed (here: it ran out of time) is recorded with the
// action taken and the policy's error.
func TestReviewPolicyFailureRecorded(t *testing.T) {
	slow := `package driftguard

decision := {"action": "allow", "reason": "slow"} if {
	count([x | some i in numbers.range(1, 3000); some j in numbers.range(1, 3000); x := i * j; x < 0]) == 0
}
`
	scaled := strings.Replace(desiredDeployment, `"replicas":3`, `"replicas":5`, 1)
	for _, failClosed := range []bool{true, false} {
		var buf bytes.Buffer
		v := newValidator(t, &buf)
		engine := policy.NewEngine(policy.Config{Timeout: 20 * time.Millisecond}, logr.Discard())
		if err := engine.Load(map[string]string{"slow.rego": slow}); err != nil {
			t.Fatal(err)
		}
		v.Policy, v.FailClosed = engine, failClosed
		resp := v.Review(context.Background(), request(admissionv1.Update, "alice", "", scaled))
		if resp.Allowed == failClosed {
			t.Fatalf("failClosed=%v: allowed = %v", failClosed, resp.Allowed)
		}
		if err := v.Audit.Flush(context.Background()); err != nil {
			t.Fatal(err)
		}
		var rec audit.Record
		if err := json.Unmarshal(buf.Bytes(), &rec); err != nil {
			t.Fatalf("failClosed=%v: no record: %v %q", failClosed, err, buf.String())
		}
		want := "deny"
		if !failClosed {
			want = "allow"
		}
		if rec.Type != audit.Decision || rec.Action != want || rec.Rule != decision.RuleFailurePolicy || !strings.Contains(rec.Error, "timed out") ||
			len(rec.Fields) != 1 || rec.Fields[0].Path != "/spec/replicas" {
			t.Fatalf("failClosed=%v: record %+v", failClosed, rec)
		}
	}
}

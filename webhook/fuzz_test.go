package webhook

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"

	admissionv1 "k8s.io/api/admission/v1"
)

// FuzzReviewDecoder: any body a client sends gets an answer (an
// AdmissionReview or a 4xx), never a panic, from both webhooks.
func FuzzReviewDecoder(f *testing.F) {
	scaled := `{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"1","kind":{"group":"apps","version":"v1","kind":"Deployment"},"resource":{"group":"apps","version":"v1","resource":"deployments"},"namespace":"shop","name":"web","operation":"UPDATE","userInfo":{"username":"alice"},"object":` + desiredDeployment + `}}`
	for _, seed := range []string{
		scaled,
		`{"request":{"uid":"2","operation":"CREATE","namespace":"shop","name":"x","kind":{"kind":"ConfigMap","version":"v1"},"object":{"metadata":{"name":"x"}}}}`,
		`{"request":{"operation":"DELETE","namespace":"shop","name":"web","kind":{"group":"apps","kind":"Deployment"},"oldObject":"not an object"}}`,
		`{"request":{"subResource":"scale","operation":"UPDATE","name":"web","resource":{"resource":"nothing"}}}`,
		`{"request":null}`, `[]`, `{`, "",
	} {
		f.Add([]byte(seed))
	}
	var buf bytes.Buffer
	v := newValidator(f, &buf)
	m := &Stamper{Validator: v}
	f.Fuzz(func(t *testing.T, body []byte) {
		for _, h := range []http.Handler{v, m} {
			req := httptest.NewRequest(http.MethodPost, "/", bytes.NewReader(body))
			req.Header.Set("Content-Type", "application/json")
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			switch {
			case rec.Code == http.StatusOK:
				var out admissionv1.AdmissionReview
				if err := json.Unmarshal(rec.Body.Bytes(), &out); err != nil || out.Response == nil {
					t.Fatalf("200 without a review response: %v %s", err, rec.Body.String())
				}
			case rec.Code < 400 || rec.Code >= 500:
				t.Fatalf("status %d for %q", rec.Code, body)
			}
		}
	})
}

package webhook

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"time"

	"github.com/go-logr/logr"
	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/driftguard/driftguard/api/v1alpha1"
)

// Stamper is the mutating webhook, which decides the CREATE and UPDATE of
// managed objects (the validating one decides their DELETE and scale): it
// puts the request to the Validator, so that the API server calls the guard
// once per change, not twice. A denial is answered here. An admitted change
// that was put to the policy is stamped with who made it and the request's
// UID (ChangedByAnnotation), so that the drift record that follows names a
// person and not only a field manager.
type Stamper struct {
	Validator *Validator
	// Now is the clock; nil means time.Now.
	Now func() time.Time
}

// ServeHTTP answers one mutating AdmissionReview.
func (s *Stamper) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	serveReview(w, r, s.Validator.Log, s.Review)
}

// Review decides one request and, when it admits a decided change, returns
// the stamp as a JSON patch.
func (s *Stamper) Review(ctx context.Context, req *admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse {
	if req.SubResource != "" || (req.Operation != admissionv1.Update && req.Operation != admissionv1.Create) {
		return allowed() // not registered for these: the validating webhook decides them
	}
	out := s.Validator.review(ctx, req)
	if !out.resp.Allowed || !out.decided {
		return out.resp
	}
	now := time.Now
	if s.Now != nil {
		now = s.Now
	}
	stamp := v1alpha1.ChangedBy{User: req.UserInfo.Username, Groups: req.UserInfo.Groups, Time: now().UTC().Truncate(time.Second), RequestUID: string(req.UID)}
	patch, err := json.Marshal(stampPatch(out.object, stamp.String()))
	if err != nil {
		return out.resp
	}
	pt := admissionv1.PatchTypeJSONPatch
	out.resp.Patch, out.resp.PatchType = patch, &pt
	return out.resp
}

type patchOp struct {
	Op    string `json:"op"`
	Path  string `json:"path"`
	Value any    `json:"value"`
}

func stampPatch(obj map[string]any, value string) []patchOp {
	md, _ := obj["metadata"].(map[string]any)
	if ann, ok := md["annotations"].(map[string]any); ok && ann != nil {
		key := strings.ReplaceAll(strings.ReplaceAll(v1alpha1.ChangedByAnnotation, "~", "~0"), "/", "~1")
		return []patchOp{{Op: "add", Path: "/metadata/annotations/" + key, Value: value}}
	}
	return []patchOp{{Op: "add", Path: "/metadata/annotations", Value: map[string]string{v1alpha1.ChangedByAnnotation: value}}}
}

// serveReview decodes one AdmissionReview, asks review and writes the answer
// with the request's UID.
func serveReview(w http.ResponseWriter, r *http.Request, log logr.Logger, review func(context.Context, *admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse) {
	in, ok := decodeReview(w, r, log)
	if !ok {
		return
	}
	resp := review(r.Context(), in.Request)
	resp.UID = in.Request.UID
	writeReview(w, resp, log)
}

// decodeReview reads an AdmissionReview, answering bad requests itself.
func decodeReview(w http.ResponseWriter, r *http.Request, log logr.Logger) (*admissionv1.AdmissionReview, bool) {
	if r.Method != http.MethodPost {
		http.Error(w, "driftguard: admission reviews are POSTed", http.StatusMethodNotAllowed)
		return nil, false
	}
	if ct := r.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		http.Error(w, "driftguard: content type "+ct+" is not application/json", http.StatusUnsupportedMediaType)
		return nil, false
	}
	var review admissionv1.AdmissionReview
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, maxBody)).Decode(&review); err != nil {
		log.Info("malformed admission review", "error", err.Error(), "remote", r.RemoteAddr)
		http.Error(w, "driftguard: malformed AdmissionReview: "+err.Error(), http.StatusBadRequest)
		return nil, false
	}
	if review.Request == nil {
		http.Error(w, "driftguard: AdmissionReview has no request", http.StatusBadRequest)
		return nil, false
	}
	return &review, true
}

func writeReview(w http.ResponseWriter, resp *admissionv1.AdmissionResponse, log logr.Logger) {
	out := admissionv1.AdmissionReview{TypeMeta: metav1.TypeMeta{APIVersion: "admission.k8s.io/v1", Kind: "AdmissionReview"}, Response: resp}
	w.Header().Set("Content-Type", "application/json")
	if err := json.NewEncoder(w).Encode(&out); err != nil {
		log.Error(err, "write admission response")
	}
}

package webhook

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"reflect"
	"strings"
	"time"

	"github.com/go-logr/logr"
	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/driftguard/driftguard/api/v1alpha1"
	"github.com/driftguard/driftguard/stamp"
)

// Stamper is the mutating webhook, which decides the CREATE and UPDATE of
// managed objects (the validating one decides their DELETE and scale): it
// puts the request to the Validator, so that the API server calls the guard
// once per change, not twice. A denial is answered here. An admitted change
// that was put to the policy is stamped with who made it, as the API server
// authenticated them, and the request's UID (ChangedByAnnotation), signed
// by Stamps, so that the drift record that follows names a person. A stamp
// is the guard's alone: a write that sets or changes it otherwise gets the
// object's previous stamp back (one that removes it may).
type Stamper struct {
	Validator *Validator
	// Stamps signs stamps; without it none is issued.
	Stamps *stamp.Signer
	// Now is the clock; nil means time.Now.
	Now func() time.Time
}

// ServeHTTP answers one mutating AdmissionReview.
func (s *Stamper) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	serveReview(w, r, s.Validator.Log, s.Review)
}

// Review decides one request and returns, when it admits it, the stamp the
// object must carry as a JSON patch.
func (s *Stamper) Review(ctx context.Context, req *admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse {
	if req.Operation == admissionv1.Delete || (req.Operation == admissionv1.Update && req.SubResource == "scale") {
		// Registered here with DecideInMutating: decided, never stamped.
		return s.Validator.Review(ctx, req)
	}
	if req.SubResource != "" || (req.Operation != admissionv1.Update && req.Operation != admissionv1.Create) {
		return allowed() // not registered for these: the validating webhook decides them
	}
	out := s.Validator.review(ctx, req)
	if !out.resp.Allowed {
		return out.resp
	}
	incoming, err := stampOf(req.Object.Raw)
	if err != nil {
		return out.resp // the review could not decode it either and said so
	}
	// A write nobody decided gets the object's previous stamp back when it
	// writes or changes one; removing one (driftguard adopt does) can only
	// make the next change "unknown", so it stays removed.
	want := incoming
	if incoming != "" {
		want, _ = stampOf(req.OldObject.Raw)
	}
	if out.decided && s.Stamps != nil {
		key := requestKey(schema.GroupVersionKind{Group: req.Kind.Group, Version: req.Kind.Version, Kind: req.Kind.Kind}, req)
		c := v1alpha1.ChangedBy{User: req.UserInfo.Username, Groups: req.UserInfo.Groups, Time: s.now().UTC().Truncate(time.Second), RequestUID: string(req.UID), Manager: fieldManagerOf(req, out.object, out.old)}
		if want, err = s.Stamps.Issue(c, key.String()); err != nil {
			s.Validator.Log.Error(err, "issue a changed-by stamp", "object", key.String())
			want = ""
		}
	}
	if incoming == want {
		return out.resp
	}
	patch, err := json.Marshal(stampPatch(out.object, req.Object.Raw, incoming != "", want))
	if err != nil {
		return out.resp
	}
	pt := admissionv1.PatchTypeJSONPatch
	out.resp.Patch, out.resp.PatchType = patch, &pt
	return out.resp
}

func (s *Stamper) now() time.Time {
	if s.Now != nil {
		return s.Now()
	}
	return time.Now()
}

// stampKey is the stamp annotation's key as it appears in JSON.
var stampKey = []byte(`"` + v1alpha1.ChangedByAnnotation + `"`)

// fieldManagerOf is the field manager of req's write: the one its options
// name, else (the API server then names it after the client's user agent,
// which a review does not carry) that of the one managed-fields entry the
// write changed from old to obj (the request's objects, decoded): the API
// server updates them before admission.
func fieldManagerOf(req *admissionv1.AdmissionRequest, obj, old map[string]any) string {
	var o struct {
		FieldManager string `json:"fieldManager"`
	}
	if len(req.Options.Raw) > 0 && json.Unmarshal(req.Options.Raw, &o) == nil && o.FieldManager != "" {
		return o.FieldManager
	}
	before := managedFieldsOf(old)
	manager := ""
	for k, e := range managedFieldsOf(obj) {
		if reflect.DeepEqual(before[k], e) {
			continue
		}
		if manager != "" {
			return "" // not exactly one
		}
		manager = k[0]
	}
	return manager
}

// managedFieldsOf is an object's managed-fields entries by manager,
// operation and subresource.
func managedFieldsOf(obj map[string]any) map[[3]string]any {
	md, _ := obj["metadata"].(map[string]any)
	entries, _ := md["managedFields"].([]any)
	out := make(map[[3]string]any, len(entries))
	for _, e := range entries {
		m, _ := e.(map[string]any)
		manager, _ := m["manager"].(string)
		op, _ := m["operation"].(string)
		sub, _ := m["subresource"].(string)
		out[[3]string{manager, op, sub}] = m
	}
	return out
}

// stampOf returns the changed-by annotation of a raw object ("" when none).
// Most objects carry none, and are not decoded to say so.
func stampOf(raw []byte) (string, error) {
	if len(raw) == 0 || !bytes.Contains(raw, stampKey) {
		return "", nil
	}
	var o struct {
		Metadata struct {
			Annotations map[string]string `json:"annotations"`
		} `json:"metadata"`
	}
	if err := json.Unmarshal(raw, &o); err != nil {
		return "", err
	}
	return o.Metadata.Annotations[v1alpha1.ChangedByAnnotation], nil
}

type patchOp struct {
	Op    string `json:"op"`
	Path  string `json:"path"`
	Value any    `json:"value"`
}

// stampPatch sets the object's stamp to value, or removes it when value is
// empty; present says whether the object carries one now.
func stampPatch(obj map[string]any, raw []byte, present bool, value string) []patchOp {
	key := "/metadata/annotations/" + strings.ReplaceAll(strings.ReplaceAll(v1alpha1.ChangedByAnnotation, "~", "~0"), "/", "~1")
	switch {
	case value == "":
		return []patchOp{{Op: "remove", Path: key}}
	case present:
		return []patchOp{{Op: "replace", Path: key, Value: value}}
	case hasAnnotations(obj, raw):
		return []patchOp{{Op: "add", Path: key, Value: value}}
	}
	return []patchOp{{Op: "add", Path: "/metadata/annotations", Value: map[string]string{v1alpha1.ChangedByAnnotation: value}}}
}

// hasAnnotations reports whether the object has an annotations map; obj is
// the decoded object when the review decoded it.
func hasAnnotations(obj map[string]any, raw []byte) bool {
	if obj == nil {
		if err := json.Unmarshal(raw, &obj); err != nil {
			return false
		}
	}
	md, _ := obj["metadata"].(map[string]any)
	ann, ok := md["annotations"].(map[string]any)
	return ok && ann != nil
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
	if err := json.NewDecoder(http.MaxBytesReader(unwrapStatus(w), r.Body, maxBody)).Decode(&review); err != nil {
		if tooLarge := (*http.MaxBytesError)(nil); errors.As(err, &tooLarge) {
			refused.WithLabelValues("too-large").Inc()
			http.Error(w, fmt.Sprintf("driftguard: an AdmissionReview above %d bytes (--webhook-max-request-bytes)", tooLarge.Limit), http.StatusRequestEntityTooLarge)
			return nil, false
		}
		log.Info("malformed admission review", "error", err.Error(), "remote", r.RemoteAddr)
		http.Error(w, "driftguard: malformed AdmissionReview: "+err.Error(), http.StatusBadRequest)
		return nil, false
	}
	if review.Request == nil {
		http.Error(w, "driftguard: AdmissionReview has no request", http.StatusBadRequest)
		return nil, false
	}
	nameCollectionDelete(review.Request)
	return &review, true
}

// nameCollectionDelete gives a delete of a collection its object's name. A
// delete of a collection (kubectl delete --all, a DELETE of a list URL)
// reaches admission once per object with no name and the object in
// oldObject (k8s.io/apiserver's AdmissionToValidateObjectDeleteFunc): by
// its name alone, every object of the collection would be unmanaged.
// compiled.RequestName is the same in CEL.
func nameCollectionDelete(req *admissionv1.AdmissionRequest) {
	if req.Name != "" || req.Operation != admissionv1.Delete || len(req.OldObject.Raw) == 0 {
		return
	}
	var old struct {
		Metadata struct {
			Name string `json:"name"`
		} `json:"metadata"`
	}
	if err := json.Unmarshal(req.OldObject.Raw, &old); err == nil {
		req.Name = old.Metadata.Name
	}
}

func writeReview(w http.ResponseWriter, resp *admissionv1.AdmissionResponse, log logr.Logger) {
	// Every answer, validating or mutating, leaves without a secret value.
	resp = withoutSecrets(resp)
	out := admissionv1.AdmissionReview{TypeMeta: metav1.TypeMeta{APIVersion: "admission.k8s.io/v1", Kind: "AdmissionReview"}, Response: resp}
	w.Header().Set("Content-Type", "application/json")
	if err := json.NewEncoder(w).Encode(&out); err != nil {
		log.Error(err, "write admission response")
	}
}

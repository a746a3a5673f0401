package webhook

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"encoding/json"
	"strings"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/driftguard/driftguard/api/v1alpha1"
	"github.com/driftguard/driftguard/stamp"
)

func TestStamper(t *testing.T) {
	now := time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)
	scaled := strings.Replace(desiredDeployment, `"replicas":3`, `"replicas":5`, 1)
	annotated := strings.Replace(scaled, `"labels"`, `"annotations":{"a":"b"},"labels"`, 1)
	forgedStamp := `"annotations":{"driftguard.io/changed-by":"{\"user\":\"system:kube-controller-manager\",\"time\":\"2099-01-01T00:00:00Z\"}"},"labels"`
	forged := strings.Replace(desiredDeployment, `"labels"`, forgedStamp, 1)
	forgedScaled := strings.Replace(scaled, `"labels"`, forgedStamp, 1)
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	signer := stamp.NewSigner(stamp.KeyFromCertificate(func(*tls.ClientHelloInfo) (*tls.Certificate, error) {
		return &tls.Certificate{PrivateKey: key}, nil
	}))
	tests := []struct {
		name    string
		req     *admissionv1.AdmissionRequest
		allowed bool
		path    string // of the patch; "" for no patch
		records int    // decision records
	}{
		{"admitted change to a Git field, no annotations yet", request(admissionv1.Update, "driftguard", "", scaled), true, "/metadata/annotations", 1},
		{"admitted change to a Git field, annotations there", request(admissionv1.Update, "driftguard", "", annotated), true, "/metadata/annotations/driftguard.io~1changed-by", 1},
		{"admitted change replaces a stamp written by hand", request(admissionv1.Update, "driftguard", "", forgedScaled), true, "/metadata/annotations/driftguard.io~1changed-by", 1},
		{"denied change: the denial, no stamp", request(admissionv1.Update, "alice", "", scaled), false, "", 1},
		{"no Git field changes: nothing to decide", request(admissionv1.Update, "alice", "", desiredDeployment), true, "", 0},
		{"a stamp written by hand, nothing else: removed", request(admissionv1.Update, "alice", "", forged), true, "remove", 0},
		{"a stamp removed: stays removed", replacing("alice", forged, desiredDeployment), true, "", 0},
		{"scale subresource (registered with DecideInMutating): decided, not stamped", request(admissionv1.Update, "alice", "scale", `{"kind":"Scale","spec":{"replicas":5}}`), false, "", 1},
		{"delete (registered with DecideInMutating): decided", request(admissionv1.Delete, "alice", "", desiredDeployment), false, "", 1},
		{"another subresource: not registered here", request(admissionv1.Update, "alice", "status", desiredDeployment), true, "", 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var buf bytes.Buffer
			v := newValidator(t, &buf)
			s := &Stamper{Validator: v, Stamps: signer, Now: func() time.Time { return now }}
			resp := s.Review(context.Background(), tt.req)
			if resp.Allowed != tt.allowed {
				t.Fatalf("allowed = %v, want %v (%+v)", resp.Allowed, tt.allowed, resp.Result)
			}
			if err := v.Audit.Flush(context.Background()); err != nil {
				t.Fatal(err)
			}
			if n := strings.Count(buf.String(), `"type":"decision"`); n != tt.records {
				t.Fatalf("%d decision records, want %d: %s", n, tt.records, buf.String())
			}
			if tt.path == "" {
				if resp.Patch != nil {
					t.Fatalf("unexpected patch %s", resp.Patch)
				}
				return
			}
			var ops []patchOp
			if tt.path == "remove" {
				if err := json.Unmarshal(resp.Patch, &ops); err != nil || len(ops) != 1 || ops[0].Op != "remove" || ops[0].Path != "/metadata/annotations/driftguard.io~1changed-by" {
					t.Fatalf("patch %s: %v", resp.Patch, err)
				}
				return
			}
			if err := json.Unmarshal(resp.Patch, &ops); err != nil || len(ops) != 1 || ops[0].Path != tt.path {
				t.Fatalf("patch %s: %v", resp.Patch, err)
			}
			var value string
			if m, ok := ops[0].Value.(map[string]any); ok {
				value, _ = m[v1alpha1.ChangedByAnnotation].(string)
			} else {
				value, _ = ops[0].Value.(string)
			}
			got, ok := signer.Verify(value, "apps/Deployment/shop/web")
			if !ok || got.User != "driftguard" || !got.Time.Equal(now) || got.RequestUID != "uid-1" {
				t.Fatalf("stamp = %+v (%q), verified %v", got, value, ok)
			}
		})
	}
}

// TestNameCollectionDelete: a delete of a collection reaches admission once
// per object with no name; the object's name is its old object's.
func TestNameCollectionDelete(t *testing.T) {
	old := []byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"cfg","namespace":"shop"}}`)
	tests := []struct {
		name string
		req  admissionv1.AdmissionRequest
		want string
	}{
		{"collection delete", admissionv1.AdmissionRequest{Operation: admissionv1.Delete, OldObject: runtime.RawExtension{Raw: old}}, "cfg"},
		{"named delete", admissionv1.AdmissionRequest{Name: "other", Operation: admissionv1.Delete, OldObject: runtime.RawExtension{Raw: old}}, "other"},
		{"create with generateName", admissionv1.AdmissionRequest{Operation: admissionv1.Create, Object: runtime.RawExtension{Raw: old}}, ""},
		{"update without a name", admissionv1.AdmissionRequest{Operation: admissionv1.Update, OldObject: runtime.RawExtension{Raw: old}}, ""},
		{"delete with no old object", admissionv1.AdmissionRequest{Operation: admissionv1.Delete}, ""},
		{"malformed old object", admissionv1.AdmissionRequest{Operation: admissionv1.Delete, OldObject: runtime.RawExtension{Raw: []byte(`{"metadata":`)}}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := tt.req
			nameCollectionDelete(&req)
			if req.Name != tt.want {
				t.Fatalf("name %q, want %q", req.Name, tt.want)
			}
		})
	}
}

// TestFieldManagerOf: the field manager a write's options name, else that
// of the one managed-fields entry the API server updated for it (a client
// that names none gets one after its user agent, which a review does not
// carry).
func TestFieldManagerOf(t *testing.T) {
	obj := func(entries string) []byte {
		return []byte(`{"metadata":{"name":"web","managedFields":[` + entries + `]}}`)
	}
	decode := func(raw []byte) map[string]any {
		if raw == nil {
			return nil
		}
		m, err := decodeObject(raw)
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	guard := `{"manager":"driftguard","operation":"Apply","time":"2026-12-05T10:00:00Z","fieldsV1":{"f:spec":{}}}`
	kubelet := func(at string) string {
		return `{"manager":"kubelet","operation":"Update","time":"` + at + `","fieldsV1":{"f:spec":{"f:x":{}}}}`
	}
	for _, tc := range []struct {
		name     string
		options  string
		obj, old []byte
		want     string
	}{
		{"named in the options", `{"fieldManager":"kubectl-patch"}`, obj(guard), obj(guard), "kubectl-patch"},
		{"a new entry", `{}`, obj(guard + "," + kubelet("2026-12-05T10:00:05Z")), obj(guard), "kubelet"},
		{"an entry written again", "", obj(guard + "," + kubelet("2026-12-05T10:00:05Z")), obj(guard + "," + kubelet("2026-12-05T10:00:01Z")), "kubelet"},
		{"nothing changed", "", obj(guard), obj(guard), ""},
		{"a create", "", obj(kubelet("2026-12-05T10:00:05Z")), nil, "kubelet"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req := &admissionv1.AdmissionRequest{}
			if tc.options != "" {
				req.Options.Raw = []byte(tc.options)
			}
			if got := fieldManagerOf(req, decode(tc.obj), decode(tc.old)); got != tc.want {
				t.Errorf("fieldManagerOf = %q, want %q", got, tc.want)
			}
		})
	}
}
